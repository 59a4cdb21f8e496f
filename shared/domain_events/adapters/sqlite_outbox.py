"""The transactional outbox in SQLite: a store writes a change's domain events inside the
change's own `BEGIN IMMEDIATE` write, beside its `UPDATE … WHERE <condition>`, so a refused
condition rolls the events back with it. (The DynamoDB half is `outbox.DynamoOutbox`; the two
are apart so a Lambda function's DynamoDB adapters import no SQLite at init.)
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from shared.domain_events.adapters.event_log import as_log_event
from shared.domain_events.adapters.sqlite_log_rows import MIGRATIONS as EVENT_LOG_MIGRATIONS
from shared.domain_events.adapters.sqlite_log_rows import EventRowWriter, event_row
from shared.domain_events.models import DomainEvent, check_one_team

__all__ = ["EVENT_LOG_MIGRATIONS", "EventRows", "SqliteOutbox"]


@dataclass(frozen=True)
class EventRows:
    """A change's events as the event log's rows (`SqliteOutbox.rows`)."""

    team: str
    rows: tuple[tuple[Any, ...], ...]


class SqliteOutbox:
    """A store's outbox. In two steps, so the JSON work is not done inside the write
    transaction, which every writer of the database queues for:

        rows = outbox.rows(team, events)  # before the writer lock
        with db.write() as tx:
            ...  # the change, with its condition
            outbox.append(tx, rows)

    The store's adapter must have applied `EVENT_LOG_MIGRATIONS` to its database."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._writer = EventRowWriter(clock)

    @staticmethod
    def rows(team: str, events: Sequence[DomainEvent]) -> EventRows:
        """`events` (all of `team`) as the log's rows."""
        check_one_team(team, events)
        return EventRows(team, tuple(event_row(team, as_log_event(event)) for event in events))

    def append(self, tx: sqlite3.Connection, events: EventRows) -> None:
        """Append `events` (from `rows`, which checked their team) inside the store's open
        write transaction `tx`."""
        self._writer.insert(tx, events.team, events.rows)
