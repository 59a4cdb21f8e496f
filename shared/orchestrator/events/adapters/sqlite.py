"""The event log in the embedded database. The rows, their migrations and the writer that
appends them belong to the outbox (`shared.domain_events.adapters.sqlite_log_rows`), which
writes the same rows inside other stores' transactions; this adapter appends and reads them.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from shared.config.names import TTL_ATTRIBUTE
from shared.domain_events.adapters.sqlite_log_rows import (
    INSERT_EVENT,
    MIGRATIONS,
    EventRowWriter,
    event_row,
    log_row,
)
from shared.domain_events.log import Event, expires_at
from shared.storage.snapshot import SnapshotItem, migrate_each
from shared.storage.sqlite import Database, from_json
from shared.storage.times import sortable


class SqliteEventLog:
    """`EventLog` on the embedded database."""

    def __init__(self, db: Database, clock: Callable[[], float] = time.time) -> None:
        self._db = db
        self._clock = clock
        self._writer = EventRowWriter(clock)
        db.migrate(MIGRATIONS)

    def append(self, team: str, event: Event, *, durable: bool = True) -> None:
        row = event_row(team, event)
        with self._db.write(durable=durable) as tx:
            self._writer.insert(tx, team, (row,))

    def read_after(
        self, team: str, since: datetime, event_type: str | None, limit: int
    ) -> list[Event]:
        clauses = ["team = ?", "published_at > ?", "expires_epoch >= ?"]
        parameters: list[Any] = [team, sortable(since), int(self._clock())]
        if event_type is not None:
            clauses.append("event_type = ?")
            parameters.append(event_type)
        rows = (
            self._db.connection()
            .execute(
                f"SELECT record FROM events WHERE {' AND '.join(clauses)}"  # noqa: S608 - fixed column names
                " ORDER BY published_at, id LIMIT ?",
                (*parameters, limit),
            )
            .fetchall()
        )
        return [Event.model_validate(from_json(row["record"])) for row in rows]

    def migrate_items(self, items: Iterable[dict[str, Any]]) -> int:
        """Import the event items of the old DynamoDB-shaped snapshot (other items are ignored)."""

        def write(tx: sqlite3.Connection, item: SnapshotItem) -> None:
            event = item.record(Event)
            expires = item.item.get(TTL_ATTRIBUTE)
            expiry = int(expires) if expires is not None else int(expires_at(event).timestamp())
            tx.execute(INSERT_EVENT, log_row(item.team, event, expiry))

        return migrate_each(self._db, items, {"EVENT#": write})
