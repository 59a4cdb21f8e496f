"""The transactional outbox in SQLite: a store writes a change's domain events inside the
change's own `BEGIN IMMEDIATE` write, beside its `UPDATE … WHERE <condition>`, so a refused
condition rolls the events back with it. (The DynamoDB half is `outbox.DynamoOutbox`; the two
are apart so a Lambda function's DynamoDB adapters import no SQLite at init.)
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from shared.domain_events.adapters.event_log import as_log_event
from shared.domain_events.models import DomainEvent, check_one_team
from shared.orchestrator.events.adapters.sqlite import MIGRATIONS as EVENT_LOG_MIGRATIONS
from shared.orchestrator.events.adapters.sqlite import event_row, insert_rows

__all__ = ["EVENT_LOG_MIGRATIONS", "EventRows", "append_events", "event_rows"]


@dataclass(frozen=True)
class EventRows:
    """A change's events as the event log's rows, built before the store takes the writer
    lock (see `event_rows`)."""

    team: str
    rows: tuple[tuple[Any, ...], ...]


def event_rows(team: str, events: Sequence[DomainEvent]) -> EventRows:
    """`events` (all of `team`) as rows: the JSON work of the outbox, done outside the write
    transaction, which every writer of the database queues for."""
    check_one_team(team, events)
    return EventRows(team, tuple(event_row(team, as_log_event(event)) for event in events))


def append_events(
    tx: sqlite3.Connection, team: str, events: Sequence[DomainEvent] | EventRows, now: float
) -> None:
    """Append `events` (all of `team`, or their `event_rows`) inside the store's open write
    transaction `tx`.

    The store's adapter must have applied `EVENT_LOG_MIGRATIONS` to its database."""
    prepared = events if isinstance(events, EventRows) else event_rows(team, events)
    if prepared.team != team:
        raise ValueError(f"events of team {prepared.team!r} written for team {team!r}")
    insert_rows(tx, team, prepared.rows, now)
