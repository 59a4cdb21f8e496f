"""Handoffs in the embedded database: one row per handoff, the record as JSON beside the columns
that listings filter and sort on.

A claim is one `UPDATE … WHERE status = 'open'` whose row count decides the race (inside a
`BEGIN IMMEDIATE` transaction, so it holds across threads and processes); the loser reads the
winner's claim in the same transaction.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

from shared.domain_events.adapters.sqlite_outbox_store import SqliteOutboxStore
from shared.domain_events.models import DomainEvent
from shared.handoffs.models import Claim, Handoff
from shared.handoffs.ports import AlreadyClaimed, OpenHandoffFilter, UnknownHandoff
from shared.storage.pages import Page
from shared.storage.snapshot import SnapshotItem, migrate_each
from shared.storage.sqlite import Migration, from_json, newest_first_page, to_json
from shared.storage.times import sortable
from shared.storage.values import check_item_size

MIGRATIONS = (
    Migration(
        "handoffs",
        1,
        (
            "CREATE TABLE handoffs ("
            " team TEXT NOT NULL, id TEXT NOT NULL, status TEXT NOT NULL,"
            " created_at TEXT NOT NULL, project_key TEXT, cwd TEXT, harness TEXT,"
            " record TEXT NOT NULL, PRIMARY KEY (team, id))",
            # Exactly the open handoffs, newest first: what list_handoffs reads.
            "CREATE INDEX handoffs_open ON handoffs (team, created_at DESC, id DESC)"
            " WHERE status = 'open'",
        ),
    ),
)


def _handoff(row: Any) -> Handoff:
    return Handoff.model_validate(from_json(row["record"]))


class SqliteHandoffStore(SqliteOutboxStore):
    """`HandoffStore` on the embedded database."""

    migrations = MIGRATIONS

    def create(self, team: str, handoff: Handoff, *, events: Sequence[DomainEvent] = ()) -> None:
        # The limit of a DynamoDB item, so a handoff stored here can be stored in AWS too.
        check_item_size(handoff.model_dump(mode="json", exclude_none=True), "document_md")
        rows = self._outbox.rows(team, events)
        with self._db.write() as tx:
            tx.execute(
                "INSERT INTO handoffs (team, id, status, created_at, project_key, cwd, harness,"
                " record) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                self._row(team, handoff),
            )
            self._outbox.append(tx, rows)

    def migrate_items(self, items: Iterable[dict[str, Any]]) -> int:
        """Import handoff items of the old DynamoDB-shaped snapshot (other items are ignored)."""

        def write(tx: sqlite3.Connection, item: SnapshotItem) -> None:
            tx.execute(
                "INSERT OR IGNORE INTO handoffs (team, id, status, created_at, project_key,"
                " cwd, harness, record) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                self._row(item.team, item.record(Handoff)),
            )

        return migrate_each(self._db, items, {"HANDOFF#": write})

    @staticmethod
    def _row(team: str, handoff: Handoff) -> tuple[Any, ...]:
        return (
            team,
            handoff.id,
            handoff.status,
            sortable(handoff.created_at),
            handoff.project_key,
            handoff.cwd,
            handoff.harness,
            to_json(handoff.model_dump(mode="json", exclude_none=True)),
        )

    def get(self, team: str, handoff_id: str) -> Handoff | None:
        row = (
            self._db.connection()
            .execute("SELECT record FROM handoffs WHERE team = ? AND id = ?", (team, handoff_id))
            .fetchone()
        )
        return _handoff(row) if row else None

    def claim(
        self,
        team: str,
        handoff_id: str,
        claim: Claim,
        *,
        events: Sequence[DomainEvent] = (),
    ) -> Handoff:
        rows = self._outbox.rows(team, events)
        with self._db.write() as tx:
            row = tx.execute(
                "SELECT record, status FROM handoffs WHERE team = ? AND id = ?",
                (team, handoff_id),
            ).fetchone()
            if row is None:
                raise UnknownHandoff(handoff_id)
            current = _handoff(row)
            claimed = current.model_copy(update={"status": "claimed", "claim": claim})
            updated = tx.execute(
                "UPDATE handoffs SET status = 'claimed', record = ?"
                " WHERE team = ? AND id = ? AND status = 'open'",
                (to_json(claimed.model_dump(mode="json", exclude_none=True)), team, handoff_id),
            ).rowcount
            if updated != 1:
                raise AlreadyClaimed(current.claim)
            self._outbox.append(tx, rows)
        return claimed

    def list_open(
        self,
        team: str,
        wanted: OpenHandoffFilter,
        *,
        limit: int,
        cursor: str | None = None,
    ) -> Page[Handoff]:
        where, values = ["status = 'open'"], []
        for column, value in wanted.given().items():
            where.append(f"{column} = ?")
            values.append(value)
        page = newest_first_page(
            self._db.connection(),
            "handoffs",
            team,
            order_by="created_at",
            where=where,
            values=values,
            limit=limit,
            cursor=cursor,
        )
        return Page([_handoff(row) for row in page.items], page.next_cursor)
