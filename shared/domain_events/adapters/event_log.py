"""Domain events into the team's event log (the `EventLog` port of seed 000's event tools):
`event.poll` reads them beside the events agents publish, `event_type` = the kind."""

from __future__ import annotations

from shared.domain_events.log import Event
from shared.domain_events.models import DomainEvent


def as_log_event(event: DomainEvent) -> Event:
    return Event(
        event_id=event.id,
        event_type=event.kind.value,
        payload=event.detail(),
        published_by=event.actor,
        published_at=event.time,
    )
