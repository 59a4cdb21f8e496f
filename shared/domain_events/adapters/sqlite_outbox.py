"""The transactional outbox in SQLite: a store writes a change's domain events inside the
change's own `BEGIN IMMEDIATE` write, beside its `UPDATE … WHERE <condition>`, so a refused
condition rolls the events back with it. (The DynamoDB half is `outbox.DynamoOutbox`; the two
are apart so a Lambda function's DynamoDB adapters import no SQLite at init.)
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from shared.domain_events.adapters.event_log import as_log_event
from shared.domain_events.models import DomainEvent, check_one_team
from shared.orchestrator.events.adapters.sqlite import MIGRATIONS as EVENT_LOG_MIGRATIONS
from shared.orchestrator.events.adapters.sqlite import append_in

__all__ = ["EVENT_LOG_MIGRATIONS", "append_events"]


def append_events(
    tx: sqlite3.Connection, team: str, events: Sequence[DomainEvent], now: float
) -> None:
    """Append `events` (all of `team`) inside the store's open write transaction `tx`.

    The store's adapter must have applied `EVENT_LOG_MIGRATIONS` to its database."""
    check_one_team(team, events)
    for event in events:
        append_in(tx, team, as_log_event(event), now)
