"""The event log's rows in the embedded database: one row per event, the event as JSON beside
the columns reads filter and sort on; and the writer that appends them inside a store's open
write transaction.

Owned here, by the outbox that writes these rows in a store's transaction
(`sqlite_outbox.SqliteOutbox`); the event log's SQLite adapter
(`shared.orchestrator.events.adapters.sqlite`) appends and reads the same rows.

Expiry mirrors the DynamoDB item's TTL (`expires_epoch`, whole seconds): reads skip expired
rows, and an append deletes the team's expired ones at most once a minute (lazily, as
DynamoDB's TTL does).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from shared.domain_events.log import RETENTION, Event, expires_at
from shared.storage.sqlite import Migration
from shared.storage.times import sortable

MIGRATIONS = (
    Migration(
        "events",
        1,
        (
            "CREATE TABLE events ("
            " team TEXT NOT NULL, id TEXT NOT NULL, event_type TEXT NOT NULL,"
            " published_at TEXT NOT NULL, expires_epoch INTEGER NOT NULL, record TEXT NOT NULL,"
            " PRIMARY KEY (team, id))",
            # A poll of every type, oldest first; also what the lazy expiry deletes by.
            "CREATE INDEX events_by_time ON events (team, published_at, id)",
            # A poll of one event_type, oldest first.
            "CREATE INDEX events_by_type ON events (team, event_type, published_at, id)",
        ),
    ),
    # Clustered on the poll's order, as the DynamoDB item's key is (team, time#id): an append
    # writes two b-tree pages (the table's last and the type index's) instead of four (the
    # rowid table, its (team, id) key index, the time index and the type index), inside the
    # writer lock every claim queues on.
    Migration(
        "events",
        2,
        (
            "CREATE TABLE events_clustered ("
            " team TEXT NOT NULL, id TEXT NOT NULL, event_type TEXT NOT NULL,"
            " published_at TEXT NOT NULL, expires_epoch INTEGER NOT NULL, record TEXT NOT NULL,"
            " PRIMARY KEY (team, published_at, id)) WITHOUT ROWID",
            "INSERT INTO events_clustered"
            " SELECT team, id, event_type, published_at, expires_epoch, record FROM events",
            "DROP TABLE events",
            "ALTER TABLE events_clustered RENAME TO events",
            # A poll of one event_type, oldest first.
            "CREATE INDEX events_by_type ON events (team, event_type, published_at, id)",
        ),
    ),
)

INSERT_EVENT = (
    "INSERT OR IGNORE INTO events (team, id, event_type, published_at, expires_epoch, record)"
    " VALUES (?, ?, ?, ?, ?, ?)"
)


def log_row(team: str, event: Event, expires_epoch: int) -> tuple[Any, ...]:
    return (
        team,
        event.event_id,
        event.event_type,
        sortable(event.published_at),
        expires_epoch,
        event.model_dump_json(),
    )


def event_row(team: str, event: Event) -> tuple[Any, ...]:
    """`event`'s row, ready for `EventRowWriter.insert`: built before a store takes the writer
    lock, so the JSON work is not done while every other writer queues behind it."""
    return log_row(team, event, int(expires_at(event).timestamp()))


# How often an append also deletes its team's expired events. Reads skip them anyway, so the
# delete only bounds the table's size; run on every append it was one more statement inside the
# writer lock that every claim queues on.
PURGE_EVERY_SECONDS = 60.0


class EventRowWriter:
    """Appends event rows inside an open write transaction: the log's own appends, and a
    store's outbox (the events commit or roll back with the change they report)."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._purged_at: dict[str, float] = {}  # team -> when its expired events last went

    def insert(self, tx: sqlite3.Connection, team: str, rows: Sequence[tuple[Any, ...]]) -> None:
        """Insert `rows` (of `team`, from `event_row`) in `tx`, and delete the team's expired
        events when they were last deleted `PURGE_EVERY_SECONDS` ago or more."""
        if not rows:
            return
        now = self._clock()
        if now - self._purged_at.get(team, -PURGE_EVERY_SECONDS) >= PURGE_EVERY_SECONDS:
            oldest_kept = datetime.fromtimestamp(now, tz=UTC) - RETENTION
            tx.execute(
                "DELETE FROM events WHERE team = ? AND published_at < ?",
                (team, sortable(oldest_kept)),
            )
            # Racing writers may both delete once; that is harmless, and cheaper than a lock.
            self._purged_at[team] = now
        for row in rows:
            if tx.execute(INSERT_EVENT, row).rowcount != 1:  # ids are random: a repeat is a bug
                raise ValueError(f"event {row[1]} already exists")
