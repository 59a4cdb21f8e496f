"""Where domain events go: the `DomainEventSink` port.

Two adapters: `adapters.event_log.EventLogSink` appends them to the team's event log (every
mode: locally that is the whole story, in AWS the log is the outbox the publisher drains) and
`adapters.eventbridge.EventBridgeSink` puts them on the stack's bus (the publisher only).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from shared.domain_events.models import DomainEvent


class DomainEventSink(Protocol):
    def emit(self, events: Sequence[DomainEvent]) -> None:
        """Record every event or raise: a sink never drops one silently."""
        ...
