"""What the event service needs from storage: the team's append-only, time-ordered log."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from shared.domain_events.log import Event


class EventLog(Protocol):
    """Events of one team at a time, oldest first."""

    def append(self, team: str, event: Event, *, durable: bool = True) -> None:
        """Add `event` (its id is new); it is kept `RETENTION` after `published_at`.

        (cairn's own domain events do not come through here: a store writes them in the
        transaction of the change they report, `shared.domain_events.adapters.outbox`.)
        `durable=False` (`DomainEvents.emit`'s sink, after a change already synced) returns
        without waiting for the disk where a store syncs in groups (SQLite): the append is as
        atomic and survives a crash of the process, and the next durable write's sync covers
        it; only a power cut within those milliseconds could drop it. A DynamoDB put is
        durable either way."""
        ...

    def read_after(
        self, team: str, since: datetime, event_type: str | None, limit: int
    ) -> list[Event]:
        """Up to `limit` unexpired events published strictly after `since`, oldest first (then
        by id), only of `event_type` when given."""
        ...
