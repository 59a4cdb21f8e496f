"""Domain events into the team's event log (the `EventLog` port of seed 000's event tools):
`event.poll` reads them beside the events agents publish, `event_type` = the kind."""

from __future__ import annotations

from collections.abc import Sequence

from shared.domain_events.models import DomainEvent
from shared.orchestrator.events.models import Event
from shared.orchestrator.events.ports import EventLog


def as_log_event(event: DomainEvent) -> Event:
    return Event(
        event_id=event.id,
        event_type=event.kind.value,
        payload=event.detail(),
        published_by=event.actor,
        published_at=event.time,
    )


class EventLogSink:
    """`DomainEventSink` on the event log (both storages: the log's own adapters)."""

    def __init__(self, log: EventLog) -> None:
        self._log = log

    def emit(self, events: Sequence[DomainEvent]) -> None:
        # The change an event reports is already committed and synced; the event does not
        # wait for a second sync (in SQLite it doubled a task claim's wait for the disk, and
        # the claim race's throughput fell by a third). It survives a crash of the process;
        # docs/events.md gives the guarantee.
        for event in events:
            self._log.append(event.team, as_log_event(event), durable=False)
