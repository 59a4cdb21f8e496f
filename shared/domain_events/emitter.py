"""What the services use to make domain events: `DomainEvents.event(team, kind, actor, …)`.

A service builds the events of a change before making it and passes them to the store method
that makes it (`events=[…]`): the store writes them in the same transaction (the outbox,
`adapters.outbox`), so a refused or failed change records nothing and a stored change always
has its events. `emit` (through the sink, after the change) remains for a change no store
transaction carries; if its sink fails, the failure is logged with the event's kind and ids
and the call is not failed for it (docs/events.md).
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
    """Builds events (id, time) for the stores' transactions; `emit` hands one to the sink."""

    def __init__(
        self, sink: DomainEventSink | None = None, clock: Callable[[], float] = time.time
    ) -> None:
        self._sink: DomainEventSink = sink if sink is not None else _Discard()
        self._clock = clock

    def event(self, team: str, kind: Kind, actor: str, /, **fields: FieldValue) -> DomainEvent:
        """One event of `team` caused by `actor`, not recorded: a service hands it to the
        store method that makes the change (`events=[…]`), which writes it in the change's
        own transaction (`adapters.outbox`): stored exactly when the change is."""
        return DomainEvent(
            kind=kind,
            team=team,
            time=datetime.fromtimestamp(self._clock(), tz=UTC),
            actor=actor,
            fields=fields,
        )

    def emit(self, team: str, kind: Kind, actor: str, /, **fields: FieldValue) -> None:
        """Record one event of `team` caused by `actor` through the sink, after its change
        (not atomic with it: only for a change no store transaction carries); never raises."""
        event = self.event(team, kind, actor, **fields)
        try:
            self._sink.emit([event])
        except Exception:
            logger.exception(
                "a domain event was not recorded",
                extra={"domain_event": {"kind": kind, "id": event.id, "team": team, **fields}},
            )
