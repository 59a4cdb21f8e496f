"""What the services call after a change committed: `DomainEvents.emit(team, kind, actor, …)`.

A service emits only after its write succeeded, so a failed call emits nothing. If the sink
fails after that, the change stands (the caller's call succeeded): the failure is logged with
the event's kind and ids, and the call is not failed for it (docs/events.md, "Delivery").
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from shared.domain_events.models import DomainEvent, FieldValue, Kind
from shared.domain_events.ports import DomainEventSink

logger = logging.getLogger("cairn.domain_events")


class _Discard:
    def emit(self, events: Sequence[DomainEvent]) -> None:
        return None


class DomainEvents:
    """Builds events (id, time) and hands them to the sink."""

    def __init__(
        self, sink: DomainEventSink | None = None, clock: Callable[[], float] = time.time
    ) -> None:
        self._sink: DomainEventSink = sink if sink is not None else _Discard()
        self._clock = clock

    def emit(self, team: str, kind: Kind, actor: str, /, **fields: FieldValue) -> None:
        """Record one event of `team` caused by `actor`; never raises."""
        event = DomainEvent(
            kind=kind,
            team=team,
            time=datetime.fromtimestamp(self._clock(), tz=UTC),
            actor=actor,
            fields=fields,
        )
        try:
            self._sink.emit([event])
        except Exception:
            logger.exception(
                "a domain event was not recorded",
                extra={"domain_event": {"kind": kind, "id": event.id, "team": team, **fields}},
            )
