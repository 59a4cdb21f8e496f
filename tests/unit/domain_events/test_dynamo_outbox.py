"""`DynamoOutbox.write`'s answers to DynamoDB's cancellations, on a scripted client: a refused
condition is `ConditionLost` with the old item, a conflict with another transaction is retried
(each attempt with its own token), anything else is raised as it came."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pytest
from botocore.exceptions import ClientError

from shared.domain_events.adapters.outbox import CONFLICT_ATTEMPTS, DynamoOutbox
from shared.domain_events.emitter import DomainEvents
from shared.domain_events.models import Kind
from shared.storage.dynamo import ConditionLost

CHANGE = {"Update": {"TableName": "t", "Key": {"pk": "TEAM#a", "sk": "TASK#1"}}}


def cancelled(*codes: str, item: dict[str, Any] | None = None) -> ClientError:
    reasons: list[Any] = [{"Code": code} for code in codes]
    if item is not None:
        reasons[0]["Item"] = item
    return ClientError(
        {
            "Error": {"Code": "TransactionCanceledException", "Message": "cancelled"},
            "CancellationReasons": reasons,
        },
        "TransactWriteItems",
    )


class Scripted:
    """A client answering each call with the next error of `script` (None: success)."""

    def __init__(self, *script: ClientError | None) -> None:
        self.script = list(script)
        self.calls: list[dict[str, Any]] = []

    def transact_write_items(self, **kwargs: Any) -> dict[str, Any]:
        self.calls.append(kwargs)
        answer = self.script.pop(0)
        if answer is not None:
            raise answer
        return {}


def outbox(client: Scripted) -> DynamoOutbox:
    table = SimpleNamespace(name="coordination", meta=SimpleNamespace(client=client))
    return DynamoOutbox(table, sleep=lambda _: None)  # type: ignore[arg-type]


def events() -> list[Any]:
    made = DomainEvents(clock=lambda: datetime(2026, 11, 23, tzinfo=UTC).timestamp())
    return [made.event("a", Kind.TASK_CLAIMED, "agent", task_id="tsk_1")]


def test_the_change_and_each_event_are_one_transaction() -> None:
    client = Scripted(None)
    outbox(client).write("a", CHANGE, events())
    (call,) = client.calls
    change, event = call["TransactItems"]
    assert change["Update"]["ReturnValuesOnConditionCheckFailure"] == "ALL_OLD"
    assert event["Put"]["TableName"] == "coordination"
    assert event["Put"]["Item"]["event_type"] == "cairn.task.claimed"
    assert event["Put"]["ConditionExpression"] == "attribute_not_exists(pk)"


def test_a_refused_condition_is_condition_lost_with_the_old_item() -> None:
    client = Scripted(
        cancelled("ConditionalCheckFailed", "None", item={"status": {"S": "claimed"}})
    )
    with pytest.raises(ConditionLost) as lost:
        outbox(client).write("a", CHANGE, events())
    assert lost.value.item == {"status": "claimed"}
    assert len(client.calls) == 1


def test_a_conflict_is_retried_with_a_new_token_each_attempt() -> None:
    client = Scripted(cancelled("TransactionConflict", "None"), None)
    outbox(client).write("a", CHANGE, events())
    first, second = client.calls
    assert first["ClientRequestToken"] != second["ClientRequestToken"]


def test_conflicts_that_never_end_are_raised_after_the_last_attempt() -> None:
    client = Scripted(*[cancelled("TransactionConflict", "None")] * CONFLICT_ATTEMPTS)
    with pytest.raises(ClientError):
        outbox(client).write("a", CHANGE, events())
    assert len(client.calls) == CONFLICT_ATTEMPTS


def test_an_event_that_cannot_be_written_is_raised_not_taken_for_a_lost_condition() -> None:
    client = Scripted(cancelled("None", "ConditionalCheckFailed"))
    with pytest.raises(ClientError):
        outbox(client).write("a", CHANGE, events())


def test_events_of_another_team_are_refused_before_any_call() -> None:
    client = Scripted()
    with pytest.raises(ValueError, match="'a'"):
        outbox(client).write("b", CHANGE, events())
    assert client.calls == []
