"""What the services use to make domain events: `DomainEvents.event(team, kind, actor, …)`.

A service builds the events of a change before making it and passes them to the store method
that makes it (`events=[…]`): the store writes them in the same transaction (the outbox,
`adapters.outbox`), so a refused or failed change records nothing and a stored change always
has its events (docs/events.md).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime

from shared.domain_events.models import DomainEvent, FieldValue, Kind


class DomainEvents:
    """Builds events (id, time) for the stores' transactions: a service hands each change's
    events to the store method that makes the change (`events=[…]`), which writes them in the
    change's own transaction (`adapters.outbox`), so no event is ever recorded apart from its
    change."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock

    def event(self, team: str, kind: Kind, actor: str, /, **fields: FieldValue) -> DomainEvent:
        """One event of `team` caused by `actor`, not recorded: stored exactly when the change
        it is handed with is."""
        return DomainEvent(
            kind=kind,
            team=team,
            time=datetime.fromtimestamp(self._clock(), tz=UTC),
            actor=actor,
            fields=fields,
        )
