"""The team's event log record: what a store's outbox writes (`adapters.outbox`,
`adapters.sqlite_outbox`) and what `event.poll` reads back (`shared.orchestrator.events`).

The record and how long the log keeps it belong here, below the event tools: the outbox writes
rows in this format from any store, and the event tools only read and append them.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel

# How long the log keeps an event: a read never returns an older one (DynamoDB's TTL collects
# them lazily, the embedded database deletes them lazily).
RETENTION = timedelta(days=7)


class Event(BaseModel):
    event_id: str
    event_type: str
    payload: dict[str, Any]
    published_by: str
    published_at: datetime


def expires_at(event: Event) -> datetime:
    """When `event` leaves the log."""
    return event.published_at + RETENTION
