"""Memories in the embedded database: one row per memory, the record as JSON beside the columns
reads select on.

The row that holds a key carries it in `alias_namespace` and `alias_key`, under a unique index:
`memory_get` by key is one indexed lookup, and key and record change in the same row, so they
cannot disagree. A namespace is `KEY` for a `memory_put` key (unique per team) or
`ENGRAM#<wallet>` for an engram key (unique per wallet) — the same two namespaces as the
DynamoDB sort keys. `create` checks and takes the key inside one `BEGIN IMMEDIATE`
transaction, so two writers of one key can never both win, in this process or another. A
memory leaving the active states gives its key up (the columns are cleared).

Expiry is decided at read time (`expires_at <= now`): an expired memory is never returned by
`get`, nor by key; `create` takes over an expired holder's key and deletes its record in the
same transaction. (Versions before migration 3 kept the keys in a `memory_aliases` table; the
migration moves each onto the row it named.)
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from typing import Any, Literal

from shared.domain_events.adapters.sqlite_outbox import EVENT_LOG_MIGRATIONS, SqliteOutbox
from shared.domain_events.models import DomainEvent
from shared.memory.models import Finding, Memory, MemoryFlag
from shared.memory.ports import KeyTaken, MemoryGone, MemoryPinned, StateChanged
from shared.storage.sqlite import Database, Migration, from_json, id_batches, to_json
from shared.storage.times import sortable
from shared.storage.values import check_item_size, from_dynamo

MIGRATIONS = (
    Migration(
        "memories",
        1,
        (
            # Primary key (team, id): `get`, and `iter_team` in id order.
            "CREATE TABLE memories ("
            " team TEXT NOT NULL, id TEXT NOT NULL, expires_at TEXT, updated_at TEXT NOT NULL,"
            " record TEXT NOT NULL, PRIMARY KEY (team, id))",
            # `iter_recent`: recall without a query reads a page, not the whole team.
            "CREATE INDEX memories_recent ON memories (team, updated_at DESC, id DESC)",
            # Primary key (team, namespace, key): `id_for_key` and the uniqueness of a key.
            "CREATE TABLE memory_aliases ("
            " team TEXT NOT NULL, namespace TEXT NOT NULL, key TEXT NOT NULL,"
            " memory_id TEXT NOT NULL, expires_at TEXT,"
            " PRIMARY KEY (team, namespace, key))",
        ),
    ),
    Migration(
        "memories",
        2,
        (
            # The lifecycle status as a column, so a transition's condition reads it (and an
            # index lists a state); existing rows take theirs from the record (filed when it
            # has none).
            "ALTER TABLE memories ADD COLUMN status TEXT NOT NULL DEFAULT 'filed'",
            "UPDATE memories SET status = COALESCE(json_extract(record, '$.status'), 'filed')",
            "CREATE INDEX memories_status ON memories (team, status, id)",
            # The curator's findings (conflicts, duplicate clusters): the record as JSON.
            "CREATE TABLE memory_findings ("
            " team TEXT NOT NULL, id TEXT NOT NULL, status TEXT NOT NULL, record TEXT NOT NULL,"
            " PRIMARY KEY (team, id))",
        ),
    ),
    Migration(
        "memories",
        3,
        (
            # The key moves onto the row of the memory it names: a get by key is one lookup of
            # the unique index, and no write can leave key and record apart. An alias whose
            # memory is gone (it could only dangle) is dropped with the table.
            "ALTER TABLE memories ADD COLUMN alias_namespace TEXT",
            "ALTER TABLE memories ADD COLUMN alias_key TEXT",
            # Without it the UPDATE below scans every alias for every memory: quadratic, minutes
            # at 100k keyed memories. Dropped with its table.
            "CREATE INDEX memory_aliases_by_memory ON memory_aliases (team, memory_id)",
            "UPDATE memories SET (alias_namespace, alias_key) = ("
            " SELECT a.namespace, a.key FROM memory_aliases a"
            " WHERE a.team = memories.team AND a.memory_id = memories.id LIMIT 1)",
            "CREATE UNIQUE INDEX memories_by_key ON memories (team, alias_namespace, alias_key)"
            " WHERE alias_key IS NOT NULL",
            "DROP TABLE memory_aliases",
        ),
    ),
)

TEAM_KEYS = "KEY"
RECENT_BATCH = 100


def _namespace(wallet: str | None) -> str:
    return f"ENGRAM#{wallet}" if wallet is not None else TEAM_KEYS


def _expiry(memory: Memory) -> str | None:
    return sortable(memory.expires_at) if memory.expires_at is not None else None


def _now() -> str:
    return sortable(datetime.now(UTC))


# Ids bound in one `get_many` statement: within SQLite's limit on parameters (999 before 3.32).


def _record(memory: Memory) -> str:
    record = memory.model_dump(mode="json", exclude_none=True)
    # The limit of a DynamoDB item, so a memory stored here can be stored in AWS too.
    check_item_size(record, "content")
    return to_json(record)


def _memory(row: Any) -> Memory:
    return Memory.model_validate(from_json(row["record"]))


def _insert(tx: sqlite3.Connection, team: str, memory: Memory) -> None:
    """Insert `memory`, holding its key (the caller has freed the key first)."""
    tx.execute(
        "INSERT OR REPLACE INTO memories"
        " (team, id, expires_at, updated_at, status, record, alias_namespace, alias_key)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (
            team,
            memory.id,
            _expiry(memory),
            sortable(memory.updated_at),
            memory.status,
            _record(memory),
            _namespace(memory.wallet_address) if memory.key is not None else None,
            memory.key,
        ),
    )


def _free_key(tx: sqlite3.Connection, team: str, memory: Memory) -> None:
    """Take `memory`'s key from whichever other memory holds it."""
    tx.execute(
        "UPDATE memories SET alias_namespace = NULL, alias_key = NULL"
        " WHERE team = ? AND alias_namespace = ? AND alias_key = ? AND id != ?",
        (team, _namespace(memory.wallet_address), memory.key, memory.id),
    )


def _settle_key(tx: sqlite3.Connection, team: str, memory: Memory) -> None:
    """After a write of keyed `memory`: an active one holds its key unless another memory
    does; an inactive one gives it up."""
    if memory.key is None:
        return
    if not memory.active:
        tx.execute(
            "UPDATE memories SET alias_namespace = NULL, alias_key = NULL"
            " WHERE team = ? AND id = ?",
            (team, memory.id),
        )
        return
    namespace = _namespace(memory.wallet_address)
    tx.execute(
        "UPDATE memories SET alias_namespace = ?, alias_key = ? WHERE team = ? AND id = ?"
        " AND NOT EXISTS (SELECT 1 FROM memories WHERE team = ? AND alias_namespace = ?"
        " AND alias_key = ? AND id != ?)",
        (namespace, memory.key, team, memory.id, team, namespace, memory.key, memory.id),
    )


def _update(tx: sqlite3.Connection, team: str, memory: Memory) -> int:
    return tx.execute(
        "UPDATE memories SET expires_at = ?, updated_at = ?, status = ?, record = ?"
        " WHERE team = ? AND id = ?",
        (
            _expiry(memory),
            sortable(memory.updated_at),
            memory.status,
            _record(memory),
            team,
            memory.id,
        ),
    ).rowcount


def _expect(tx: sqlite3.Connection, team: str, memory: Memory, expected: frozenset[str]) -> Memory:
    """Inside the write lock: refuse (`StateChanged`) unless the stored status is expected;
    else `memory` with the stored pin (only `set_pinned` changes it: a pin that landed since
    the caller's read is never undone by writing back the copy it read)."""
    row = tx.execute(
        "SELECT status, record FROM memories WHERE team = ? AND id = ?", (team, memory.id)
    ).fetchone()
    if row is None:
        raise StateChanged(None)
    if row["status"] not in expected:
        raise StateChanged(_memory(row))
    return memory.model_copy(update={"pinned": _memory(row).pinned})


class SqliteMemoryStore:
    """`MemoryStore` on the embedded database."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._outbox = SqliteOutbox()
        db.migrate(MIGRATIONS)

    def get(self, team: str, memory_id: str) -> Memory | None:
        row = (
            self._db.connection()
            .execute(
                "SELECT record FROM memories WHERE team = ? AND id = ?"
                " AND (expires_at IS NULL OR expires_at > ?)",
                (team, memory_id, _now()),
            )
            .fetchone()
        )
        return _memory(row) if row else None

    def get_many(self, team: str, memory_ids: Sequence[str]) -> dict[str, Memory]:
        found: dict[str, Memory] = {}
        connection = self._db.connection()
        now = _now()
        for chunk, marks in id_batches(memory_ids):
            rows = connection.execute(
                f"SELECT record FROM memories WHERE team = ? AND id IN ({marks})"  # noqa: S608 - placeholders only
                " AND (expires_at IS NULL OR expires_at > ?)",
                (team, *chunk, now),
            ).fetchall()
            for row in rows:
                memory = _memory(row)
                found[memory.id] = memory
        return found

    def id_for_key(self, team: str, key: str, wallet: str | None = None) -> str | None:
        row = self._by_key("id", team, key, wallet)
        return str(row["id"]) if row else None

    def get_by_key(self, team: str, key: str, wallet: str | None = None) -> Memory | None:
        row = self._by_key("record", team, key, wallet)
        return _memory(row) if row else None

    def _by_key(
        self, column: Literal["id", "record"], team: str, key: str, wallet: str | None
    ) -> Any:
        """`column` of the unexpired memory the wallet's (or the team's) `key` names, if any."""
        return (
            self._db.connection()
            .execute(
                f"SELECT {column} FROM memories WHERE team = ? AND alias_namespace = ?"  # noqa: S608 - a fixed column
                " AND alias_key = ? AND (expires_at IS NULL OR expires_at > ?)",
                (team, _namespace(wallet), key, _now()),
            )
            .fetchone()
        )

    def create(self, team: str, memory: Memory, *, events: Sequence[DomainEvent] = ()) -> None:
        now = _now()
        if events:
            self._db.migrate(EVENT_LOG_MIGRATIONS)  # the outbox: events commit with the memory
        rows = self._outbox.rows(team, events)
        with self._db.write() as tx:
            if memory.key is not None:
                holder = tx.execute(
                    "SELECT id, expires_at FROM memories"
                    " WHERE team = ? AND alias_namespace = ? AND alias_key = ?",
                    (team, _namespace(memory.wallet_address), memory.key),
                ).fetchone()
                if holder is not None:
                    if holder["expires_at"] is None or holder["expires_at"] > now:
                        raise KeyTaken(memory.key)
                    # Expired: the key is free; its old record goes.
                    tx.execute(
                        "DELETE FROM memories WHERE team = ? AND id = ?", (team, holder["id"])
                    )
            _insert(tx, team, memory)
            self._outbox.append(tx, rows)

    def set_pinned(self, team: str, memory_id: str, pinned: bool) -> Memory:
        with self._db.write() as tx:
            # Read in the write transaction and change the pin alone: content written since
            # the caller's read is kept (the key lives on this row: nothing else to update).
            row = tx.execute(
                "SELECT record FROM memories WHERE team = ? AND id = ?", (team, memory_id)
            ).fetchone()
            if row is None:
                raise MemoryGone(memory_id)
            stored = _memory(row).model_copy(update={"pinned": pinned})
            tx.execute(
                "UPDATE memories SET record = ? WHERE team = ? AND id = ?",
                (_record(stored), team, memory_id),
            )
        return stored

    def delete(self, team: str, memory: Memory, *, unless_pinned: bool = False) -> None:
        with self._db.write() as tx:
            if unless_pinned:
                # Read in the write transaction: a pin cannot land between check and delete.
                row = tx.execute(
                    "SELECT record FROM memories WHERE team = ? AND id = ?", (team, memory.id)
                ).fetchone()
                if row is not None and _memory(row).pinned:
                    raise MemoryPinned(memory.id)
            # The key goes with the row (a key that moved on is another row's).
            tx.execute("DELETE FROM memories WHERE team = ? AND id = ?", (team, memory.id))

    def drop_alias(self, team: str, key: str, wallet: str | None, memory_id: str) -> None:
        with self._db.write() as tx:
            tx.execute(
                "UPDATE memories SET alias_namespace = NULL, alias_key = NULL"
                " WHERE team = ? AND id = ? AND alias_namespace = ? AND alias_key = ?",
                (team, memory_id, _namespace(wallet), key),
            )

    def add_flag(self, team: str, memory_id: str, flag: MemoryFlag) -> Memory | None:
        with self._db.write() as tx:
            row = tx.execute(
                "SELECT record FROM memories WHERE team = ? AND id = ?", (team, memory_id)
            ).fetchone()
            if row is None:
                return None
            current = _memory(row)
            flagged = current.model_copy(update={"flags": [*current.flags, flag]})
            updated = tx.execute(
                "UPDATE memories SET record = ? WHERE team = ? AND id = ?",
                (_record(flagged), team, memory_id),
            ).rowcount
            if updated != 1:  # cannot happen inside the write lock; never write half
                raise MemoryGone(memory_id)
        return flagged

    def transition(self, team: str, memory: Memory, expected: frozenset[str]) -> Memory:
        with self._db.write() as tx:
            memory = _expect(tx, team, memory, expected)
            _update(tx, team, memory)
            _settle_key(tx, team, memory)
        return memory

    def supersede(self, team: str, old: Memory, expected: frozenset[str], new: Memory) -> None:
        with self._db.write() as tx:
            old = _expect(tx, team, old, expected)
            _update(tx, team, old)
            _settle_key(tx, team, old)
            if new.key is not None:
                _free_key(tx, team, new)  # the new version takes the key over
            _insert(tx, team, new)

    def iter_team(self, team: str) -> Iterator[Memory]:
        rows = (
            self._db.connection()
            .execute("SELECT record FROM memories WHERE team = ? ORDER BY id", (team,))
            .fetchall()
        )
        for row in rows:
            yield _memory(row)

    def iter_recent(self, team: str) -> Iterator[Memory]:
        """Newest update first, read in batches from the index: a caller that stops early
        reads only what it used."""
        position: tuple[str, str] | None = None
        while True:
            if position is None:
                rows = self._db.connection().execute(
                    "SELECT id, updated_at, record FROM memories WHERE team = ?"
                    " ORDER BY updated_at DESC, id DESC LIMIT ?",
                    (team, RECENT_BATCH),
                )
            else:
                rows = self._db.connection().execute(
                    "SELECT id, updated_at, record FROM memories WHERE team = ?"
                    " AND (updated_at, id) < (?, ?) ORDER BY updated_at DESC, id DESC LIMIT ?",
                    (team, *position, RECENT_BATCH),
                )
            batch = rows.fetchall()
            for row in batch:
                yield _memory(row)
            if len(batch) < RECENT_BATCH:
                return
            position = (batch[-1]["updated_at"], batch[-1]["id"])

    def migrate_items(self, items: Iterable[dict[str, Any]]) -> int:
        """Import the memories and key aliases of an old DynamoDB-shaped snapshot; returns how
        many items were taken (other record types are ignored, and so is an alias whose memory
        is not in the snapshot: it would only dangle)."""
        memories: dict[tuple[str, str], Memory] = {}
        aliases: list[tuple[str, str]] = []
        for item in items:
            sort_key = str(item.get("sk", ""))
            team = str(item.get("team") or str(item.get("pk", "")).removeprefix("TEAM#"))
            if sort_key.startswith("MEMORY#"):
                memories[(team, sort_key.removeprefix("MEMORY#"))] = Memory.model_validate(
                    {k: from_dynamo(v) for k, v in item.items() if k in Memory.model_fields}
                )
            elif sort_key.startswith(("KEY#", "ENGRAM#")) and "memory_id" in item:
                aliases.append((team, str(item["memory_id"])))
        imported = 0
        with self._db.write() as tx:
            for (team, memory_id), memory in memories.items():
                tx.execute(
                    "INSERT OR IGNORE INTO memories"
                    " (team, id, expires_at, updated_at, status, record) VALUES (?, ?, ?, ?, ?, ?)",
                    (
                        team,
                        memory_id,
                        _expiry(memory),
                        sortable(memory.updated_at),
                        memory.status,
                        _record(memory),
                    ),
                )
                imported += 1
            for team, memory_id in aliases:
                owner = memories.get((team, memory_id))
                if owner is None or owner.key is None:
                    continue
                # The alias's namespace and key are the record's own (a wallet could hold '#');
                # a key some row holds already (an earlier import) stays with it.
                tx.execute(
                    "UPDATE OR IGNORE memories SET alias_namespace = ?, alias_key = ?"
                    " WHERE team = ? AND id = ? AND alias_key IS NULL",
                    (_namespace(owner.wallet_address), owner.key, team, memory_id),
                )
                imported += 1
        return imported


class SqliteFindingStore:
    """`FindingStore` on the embedded database (table `memory_findings`, see MIGRATIONS)."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._outbox = SqliteOutbox()
        db.migrate(MIGRATIONS)

    def add(self, team: str, finding: Finding, *, events: Sequence[DomainEvent] = ()) -> bool:
        if events:
            self._db.migrate(EVENT_LOG_MIGRATIONS)  # the outbox: events commit with the finding
        rows = self._outbox.rows(team, events)
        with self._db.write() as tx:
            added = tx.execute(
                "INSERT OR IGNORE INTO memory_findings (team, id, status, record)"
                " VALUES (?, ?, ?, ?)",
                (team, finding.id, finding.status, _finding_record(finding)),
            ).rowcount
            if added == 1:
                self._outbox.append(tx, rows)
        return added == 1

    def get(self, team: str, finding_id: str) -> Finding | None:
        row = (
            self._db.connection()
            .execute(
                "SELECT record FROM memory_findings WHERE team = ? AND id = ?", (team, finding_id)
            )
            .fetchone()
        )
        return Finding.model_validate(from_json(row["record"])) if row else None

    def iter_team(self, team: str) -> Iterator[Finding]:
        rows = (
            self._db.connection()
            .execute("SELECT record FROM memory_findings WHERE team = ? ORDER BY id", (team,))
            .fetchall()
        )
        for row in rows:
            yield Finding.model_validate(from_json(row["record"]))

    def settle(self, team: str, finding: Finding) -> None:
        with self._db.write() as tx:
            row = tx.execute(
                "SELECT status, record FROM memory_findings WHERE team = ? AND id = ?",
                (team, finding.id),
            ).fetchone()
            if row is None or row["status"] != "open":
                raise StateChanged(
                    Finding.model_validate(from_json(row["record"])) if row else None
                )
            tx.execute(
                "UPDATE memory_findings SET status = ?, record = ? WHERE team = ? AND id = ?",
                (finding.status, _finding_record(finding), team, finding.id),
            )


def _finding_record(finding: Finding) -> str:
    return to_json(finding.model_dump(mode="json", exclude_none=True))
