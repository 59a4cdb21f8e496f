"""Domain events onto an EventBridge bus (PutEvents).

PutEvents takes at most 10 entries a call and may accept some entries of a call and refuse
others (`FailedEntryCount`, an `ErrorCode` per refused entry): only the refused ones are sent
again, up to `attempts` calls with a doubling pause. What is still refused then raises
`PublishFailed`, so the publisher's stream batch fails and is retried (nothing is dropped);
an event sent twice carries the same `detail.id`, on which consumers de-duplicate.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import KW_ONLY, dataclass
from typing import TYPE_CHECKING, Any

from shared.domain_events.models import SOURCE, DomainEvent

if TYPE_CHECKING:
    from mypy_boto3_events import EventBridgeClient
    from mypy_boto3_events.type_defs import PutEventsRequestEntryTypeDef

MAX_ENTRIES = 10  # PutEvents' limit per call


class PublishFailed(Exception):
    """Entries EventBridge kept refusing: `errors` maps each event id to its error code."""

    def __init__(self, errors: dict[str, str]) -> None:
        super().__init__(f"EventBridge refused {len(errors)} event(s): {errors}")
        self.errors = errors


def entry(event: DomainEvent, bus_name: str) -> PutEventsRequestEntryTypeDef:
    return {
        "Source": SOURCE,
        "DetailType": event.detail_type,
        "Detail": json.dumps(event.detail(), separators=(",", ":")),
        "EventBusName": bus_name,
        "Time": event.time,
    }


@dataclass(eq=False)
class EventBridgeSink:
    """`DomainEventSink` on the bus `bus_name`."""

    client: EventBridgeClient
    bus_name: str
    _: KW_ONLY
    attempts: int = 4
    backoff_seconds: float = 0.1
    sleep: Callable[[float], None] = time.sleep

    def emit(self, events: Sequence[DomainEvent]) -> None:
        errors: dict[str, str] = {}
        for start in range(0, len(events), MAX_ENTRIES):
            errors.update(self._put(list(events[start : start + MAX_ENTRIES])))
        if errors:
            raise PublishFailed(errors)

    def _put(self, batch: list[DomainEvent]) -> dict[str, str]:
        """Send one batch of at most 10, retrying the refused entries; what stays refused."""
        pending, errors = batch, {}
        for attempt in range(self.attempts):
            if attempt:
                self.sleep(self.backoff_seconds * 2 ** (attempt - 1))
            reply: Any = self.client.put_events(
                Entries=[entry(event, self.bus_name) for event in pending]
            )
            if not reply.get("FailedEntryCount"):
                return {}
            # Result entries are in the request's order: an ErrorCode marks a refused one.
            refused = [
                (event, result)
                for event, result in zip(pending, reply["Entries"], strict=True)
                if result.get("ErrorCode")
            ]
            pending = [event for event, _ in refused]
            errors = {event.id: str(result["ErrorCode"]) for event, result in refused}
        return errors
