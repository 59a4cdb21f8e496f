"""Agents in the embedded database: one row per agent (the record as JSON beside the columns
reads select on) and one row per taken name.

`create` checks the name and takes it inside one `BEGIN IMMEDIATE` transaction — free, or
still pointing at the agent being replaced, which is retired in the same transaction — so two
registrations of one name can never both win, in this process or another. A deregistered
record stays `RETIRED_DAYS` (as DynamoDB's TTL keeps it) and is not returned after that.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta
from sqlite3 import Connection
from typing import Any

from shared.config.names import TTL_ATTRIBUTE
from shared.orchestrator.agents.adapters import (
    AGENT_PREFIX,
    NAME_PREFIX,
    RETIRED_DAYS,
    agent_from_item,
)
from shared.orchestrator.agents.models import DEREGISTERED, AgentRecord
from shared.orchestrator.agents.ports import AgentChanges, NameTaken, UnknownAgent
from shared.storage.snapshot import SnapshotItem, migrate_each
from shared.storage.sqlite import Database, Migration, from_json, to_json
from shared.storage.times import sortable

MIGRATIONS = (
    Migration(
        "agents",
        1,
        (
            # Primary key (team, id): `get`, and `iter_team` in id order.
            "CREATE TABLE agents ("
            " team TEXT NOT NULL, id TEXT NOT NULL, expires_at TEXT,"
            " record TEXT NOT NULL, PRIMARY KEY (team, id))",
            # Primary key (team, name): `get_by_name` and the uniqueness of a name.
            "CREATE TABLE agent_names ("
            " team TEXT NOT NULL, name TEXT NOT NULL, agent_id TEXT NOT NULL,"
            " PRIMARY KEY (team, name))",
        ),
    ),
)

_LIVE = "(expires_at IS NULL OR expires_at > ?)"


def _now() -> str:
    return sortable(datetime.now(UTC))


def _retired_until(agent: AgentRecord) -> str | None:
    if agent.deregistered_at is None:
        return None
    return sortable(agent.deregistered_at + timedelta(days=RETIRED_DAYS))


def item_retired_until(item: dict[str, Any], agent: AgentRecord) -> str | None:
    """The `expires_at` column of an agent held as a DynamoDB item: its TTL, else the end
    of its retirement (also what moving a team from DynamoDB reads)."""
    ttl = item.get(TTL_ATTRIBUTE)
    if ttl is not None:
        return sortable(datetime.fromtimestamp(int(ttl), UTC))
    return _retired_until(agent)


def _json(agent: AgentRecord) -> str:
    return to_json(agent.model_dump(mode="json", exclude_none=True))


def _agent(row: Any) -> AgentRecord:
    return AgentRecord.model_validate(from_json(row["record"]))


def _retired(agent: AgentRecord, at: datetime, replaced_by: str | None = None) -> AgentRecord:
    """`agent` deregistered: the first deregistration time is kept, as DynamoDB's
    `if_not_exists` keeps it."""
    update: dict[str, Any] = {
        "status": DEREGISTERED,
        "deregistered_at": agent.deregistered_at or at,
    }
    if replaced_by is not None:
        update["replaced_by"] = replaced_by
    return agent.model_copy(update=update)


class SqliteAgentStore:
    """`AgentStore` on the embedded database."""

    def __init__(self, db: Database) -> None:
        self._db = db
        db.migrate(MIGRATIONS)

    @staticmethod
    def _read(connection: Connection, team: str, agent_id: str) -> AgentRecord | None:
        row = connection.execute(
            f"SELECT record FROM agents WHERE team = ? AND id = ? AND {_LIVE}",  # noqa: S608 - fixed text
            (team, agent_id, _now()),
        ).fetchone()
        return _agent(row) if row else None

    @staticmethod
    def _write(connection: Connection, team: str, agent: AgentRecord) -> int:
        return connection.execute(
            "UPDATE agents SET expires_at = ?, record = ? WHERE team = ? AND id = ?",
            (_retired_until(agent), _json(agent), team, agent.agent_id),
        ).rowcount

    def get(self, team: str, agent_id: str) -> AgentRecord | None:
        return self._read(self._db.connection(), team, agent_id)

    def get_by_name(self, team: str, name: str) -> AgentRecord | None:
        row = (
            self._db.connection()
            .execute("SELECT agent_id FROM agent_names WHERE team = ? AND name = ?", (team, name))
            .fetchone()
        )
        if row is None:
            return None
        record = self.get(team, row["agent_id"])
        if record is None:
            # The name outlived its record: free it for good (only while it still points there).
            with self._db.write() as tx:
                tx.execute(
                    "DELETE FROM agent_names WHERE team = ? AND name = ? AND agent_id = ?",
                    (team, name, row["agent_id"]),
                )
        return record

    def create(
        self, team: str, agent: AgentRecord, *, replacing: AgentRecord | None = None
    ) -> None:
        with self._db.write() as tx:
            row = tx.execute(
                "SELECT agent_id FROM agent_names WHERE team = ? AND name = ?", (team, agent.name)
            ).fetchone()
            holder = str(row["agent_id"]) if row else None
            expected = replacing.agent_id if replacing is not None else None
            if holder != expected:
                raise NameTaken(holder)
            if replacing is not None and replacing.is_active:
                current = self._read(tx, team, replacing.agent_id)
                if current is None:
                    raise NameTaken(holder)
                retired = _retired(current, agent.created_at, replaced_by=agent.agent_id)
                if self._write(tx, team, retired) != 1:
                    raise NameTaken(holder)
            # Ids are random: a collision would be a bug, so a plain INSERT (it raises).
            tx.execute(
                "INSERT INTO agents (team, id, expires_at, record) VALUES (?, ?, ?, ?)",
                (team, agent.agent_id, _retired_until(agent), _json(agent)),
            )
            tx.execute(
                "INSERT OR REPLACE INTO agent_names (team, name, agent_id) VALUES (?, ?, ?)",
                (team, agent.name, agent.agent_id),
            )

    def update(self, team: str, agent_id: str, changes: AgentChanges) -> None:
        values = changes.given()
        if not values:
            return
        with self._db.write() as tx:
            current = self._read(tx, team, agent_id)
            if current is None or not current.is_active:
                raise UnknownAgent(agent_id)
            if self._write(tx, team, current.model_copy(update=values)) != 1:
                raise UnknownAgent(agent_id)

    def deregister(self, team: str, agent_id: str, at: datetime) -> AgentRecord:
        with self._db.write() as tx:
            current = self._read(tx, team, agent_id)
            if current is None:
                raise UnknownAgent(agent_id)
            retired = _retired(current, at)
            if self._write(tx, team, retired) != 1:
                raise UnknownAgent(agent_id)
            # Free the name only if it still points here (an overwrite may have moved it on).
            tx.execute(
                "DELETE FROM agent_names WHERE team = ? AND name = ? AND agent_id = ?",
                (team, retired.name, agent_id),
            )
        return retired

    def iter_team(self, team: str) -> Iterator[AgentRecord]:
        rows = (
            self._db.connection()
            .execute(
                f"SELECT record FROM agents WHERE team = ? AND {_LIVE} ORDER BY id",  # noqa: S608 - fixed text
                (team, _now()),
            )
            .fetchall()
        )
        for row in rows:
            yield _agent(row)

    def migrate_items(self, items: Iterable[dict[str, Any]]) -> int:
        """Import the agents and name aliases of an old DynamoDB-shaped snapshot of the
        coordination table; returns how many items were taken (other records are ignored)."""

        def write_agent(tx: sqlite3.Connection, item: SnapshotItem) -> None:
            agent = agent_from_item(item.item)
            tx.execute(
                "INSERT OR IGNORE INTO agents (team, id, expires_at, record) VALUES (?, ?, ?, ?)",
                (item.team, agent.agent_id, item_retired_until(item.item, agent), _json(agent)),
            )

        def write_name(tx: sqlite3.Connection, item: SnapshotItem) -> None:
            tx.execute(
                "INSERT OR IGNORE INTO agent_names (team, name, agent_id) VALUES (?, ?, ?)",
                (item.team, item.key_after(NAME_PREFIX), str(item.item["agent_id"])),
            )

        return migrate_each(self._db, items, {AGENT_PREFIX: write_agent, NAME_PREFIX: write_name})
