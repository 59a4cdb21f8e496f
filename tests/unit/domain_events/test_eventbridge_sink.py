"""The EventBridge adapter and the stream publisher on a scripted client (no network)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from boto3.dynamodb.types import TypeSerializer

from shared.domain_events.adapters.event_log import as_log_event
from shared.domain_events.adapters.eventbridge import EventBridgeSink, PublishFailed
from shared.domain_events.models import DomainEvent, Kind
from shared.domain_events.publisher import domain_event, publish_records
from shared.storage.values import to_dynamo


class ScriptedEventBridge:
    """Answers PutEvents like EventBridge: `refuse(detail_id)` says how many more times an
    event's entry is refused (ThrottlingException) before it is accepted."""

    def __init__(self, refusals: dict[str, int] | None = None) -> None:
        self.calls: list[list[dict[str, Any]]] = []
        self.refusals = dict(refusals or {})

    def put_events(self, Entries: list[dict[str, Any]]) -> dict[str, Any]:  # boto3 names it
        self.calls.append(Entries)
        results: list[dict[str, Any]] = []
        for entry in Entries:
            event_id = json.loads(entry["Detail"])["id"]
            if self.refusals.get(event_id, 0) > 0:
                self.refusals[event_id] -= 1
                results.append({"ErrorCode": "ThrottlingException", "ErrorMessage": "slow down"})
            else:
                results.append({"EventId": f"eb-{event_id}"})
        failed = sum("ErrorCode" in r for r in results)
        return {"FailedEntryCount": failed, "Entries": results}


def _event(n: int) -> DomainEvent:
    return DomainEvent(
        kind=Kind.TASK_CLAIMED,
        id=f"evt-{n:03d}",
        team="acme",
        time=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
        actor="builder",
        fields={"task_id": f"tsk_{n}", "fence": 1},
    )


def _sink(client: ScriptedEventBridge) -> EventBridgeSink:
    return EventBridgeSink(client, "cairn-dev-events", sleep=lambda _: None)  # type: ignore[arg-type]


def test_events_go_out_in_batches_of_ten_with_the_schema() -> None:
    client = ScriptedEventBridge()

    _sink(client).emit([_event(n) for n in range(23)])

    assert [len(call) for call in client.calls] == [10, 10, 3]
    first = client.calls[0][0]
    assert first["Source"] == "cairn"
    assert first["DetailType"] == "Task Claimed"
    assert first["EventBusName"] == "cairn-dev-events"
    assert json.loads(first["Detail"]) == {
        "version": "1",
        "id": "evt-000",
        "team": "acme",
        "time": "2026-01-02T03:04:05+00:00",
        "actor": "builder",
        "task_id": "tsk_0",
        "fence": 1,
    }


def test_only_the_refused_entries_are_sent_again() -> None:
    client = ScriptedEventBridge(refusals={"evt-001": 1, "evt-003": 2})

    _sink(client).emit([_event(n) for n in range(5)])

    sent = [[json.loads(e["Detail"])["id"] for e in call] for call in client.calls]
    assert sent == [
        ["evt-000", "evt-001", "evt-002", "evt-003", "evt-004"],
        ["evt-001", "evt-003"],
        ["evt-003"],
    ]


def test_entries_still_refused_after_the_attempts_raise_naming_them() -> None:
    client = ScriptedEventBridge(refusals={"evt-002": 99})

    with pytest.raises(PublishFailed) as raised:
        _sink(client).emit([_event(n) for n in range(4)])

    assert raised.value.errors == {"evt-002": "ThrottlingException"}
    assert len(client.calls) == 4  # the default attempts


def _record(sequence: int, item: dict[str, Any], name: str = "INSERT") -> dict[str, Any]:
    serializer = TypeSerializer()
    return {
        "eventName": name,
        "dynamodb": {
            "SequenceNumber": str(sequence),
            "Keys": {"pk": {"S": item["pk"]}, "sk": {"S": item["sk"]}},
            "NewImage": {k: serializer.serialize(v) for k, v in item.items()},
        },
    }


def _log_item(event: DomainEvent) -> dict[str, Any]:
    """The item DynamoEventLog.append writes for `event` (the fields the publisher reads)."""
    logged = as_log_event(event)
    return {
        "pk": f"TEAM#{event.team}",
        "sk": f"EVENT#2026-01-02T03:04:05.000000#{logged.event_id}",
        "event_id": logged.event_id,
        "event_type": logged.event_type,
        "payload": to_dynamo(logged.payload, "payload"),
        "published_by": logged.published_by,
    }


def test_the_publisher_forwards_domain_events_and_skips_everything_else() -> None:
    event = _event(1)
    agents_own = {**_log_item(_event(2)), "event_type": "deploy.finished"}
    task_item = {"pk": "TEAM#acme", "sk": "TASK#tsk_1", "status": "claimed"}
    records = [
        _record(1, task_item),
        _record(2, agents_own),
        _record(3, _log_item(event), name="REMOVE"),
        _record(4, _log_item(event)),
    ]
    client = ScriptedEventBridge()

    assert publish_records(records, _sink(client)) == []

    assert [domain_event(r) for r in records[:3]] == [None, None, None]
    (call,) = client.calls
    assert [json.loads(e["Detail"]) for e in call] == [event.detail()]


def test_a_refused_event_is_retried_from_its_own_record() -> None:
    records = [_record(10 + n, _log_item(_event(n))) for n in range(3)]
    client = ScriptedEventBridge(refusals={"evt-001": 99, "evt-002": 99})

    assert publish_records(records, _sink(client)) == ["11"]


def test_a_kind_field_may_not_replace_the_envelope() -> None:
    with pytest.raises(ValueError, match="envelope"):
        DomainEvent(
            kind=Kind.TASK_CLAIMED,
            team="acme",
            time=datetime(2026, 1, 2, tzinfo=UTC),
            actor="builder",
            fields={"team": "other"},
        )
