"""The publisher: domain events from the coordination table's stream onto the bus.

The team's event log (in the coordination table) is the outbox: services append each domain
event to it after their change committed; the table's stream reports every appended item, and
the publisher function forwards the domain events among them (`event_type` under `cairn.`)
with `EventBridgeSink`. A batch EventBridge keeps refusing is reported from its first refused
record on (`batchItemFailures`), so Lambda retries from there and nothing is skipped: delivery
is at least once, and a repeated event keeps its `detail.id`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from boto3.dynamodb.types import TypeDeserializer

from shared.domain_events.adapters.eventbridge import PublishFailed
from shared.domain_events.models import RESERVED_PREFIX, DomainEvent, Kind
from shared.domain_events.ports import DomainEventSink
from shared.storage.values import from_dynamo

EVENT_SORT_KEY_PREFIX = "EVENT#"
_deserializer = TypeDeserializer()
_KINDS = {kind.value: kind for kind in Kind}


def domain_event(record: Mapping[str, Any]) -> DomainEvent | None:
    """The domain event a stream record inserts into the log, else None (another item, a TTL
    removal, an agent's own event, or a kind this version does not know)."""
    if record.get("eventName") != "INSERT":
        return None
    image = record.get("dynamodb", {}).get("NewImage") or {}
    item = {key: _deserializer.deserialize(value) for key, value in image.items()}
    if not str(item.get("sk", "")).startswith(EVENT_SORT_KEY_PREFIX):
        return None
    event_type = str(item.get("event_type", ""))
    kind = _KINDS.get(event_type)
    if kind is None or not event_type.startswith(RESERVED_PREFIX):
        return None
    return DomainEvent.from_detail(kind, from_dynamo(item["payload"]))


def publish_records(records: Sequence[Mapping[str, Any]], sink: DomainEventSink) -> list[str]:
    """Forward the domain events of `records` (in order); the sequence numbers to retry from:
    empty when all went out, else `[the first refused record's]`."""
    events: list[DomainEvent] = []
    sequence_of: dict[str, str] = {}
    for record in records:
        event = domain_event(record)
        if event is not None:
            events.append(event)
            sequence_of[event.id] = str(record["dynamodb"]["SequenceNumber"])
    if not events:
        return []
    try:
        sink.emit(events)
    except PublishFailed as failed:
        first = next(event for event in events if event.id in failed.errors)
        return [sequence_of[first.id]]
    return []
