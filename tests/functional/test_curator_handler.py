"""The curator worker's Lambda handler fed DynamoDB stream events, on moto.

The memories are written by the real memory service with `curation="stream"` (so nothing is
curated inline, as in AWS); the events carry the table's real items in DynamoDB JSON, the way
the memories table's stream delivers them. The search index is the embedded default
(MiniLM), as in the other functional memory tests.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import boto3
import pytest
from boto3.dynamodb.types import TypeSerializer
from botocore.exceptions import ClientError

from functions.curator.handler import handler
from shared import runtime
from shared.auth.principal import Principal
from shared.config import names
from shared.config.settings import Settings
from shared.memory.adapters.dynamodb import DynamoMemoryStore
from shared.memory.models import Memory
from shared.memory.wiring import build_finding_store, build_memory_service

_serializer = TypeSerializer()


class _Context:
    function_name = "cairn-curator"
    memory_limit_in_mb = 1024
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:cairn-curator"
    aws_request_id = "req-curator"


@dataclass
class Stream:
    """The memories table and a builder of its stream records (sequence numbers ascending)."""

    arn: str
    region: str
    sequence: int = 0

    @property
    def table(self) -> Any:
        return runtime.table(names.TABLE_MEMORIES)

    def item(self, team: str, memory_id: str) -> dict[str, Any]:
        key = {"pk": f"TEAM#{team}", "sk": f"MEMORY#{memory_id}"}
        item: dict[str, Any] = self.table.get_item(Key=key, ConsistentRead=True)["Item"]
        return item

    def record(
        self,
        event_name: str,
        new: dict[str, Any] | None = None,
        old: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """One record as Lambda receives it from a NEW_AND_OLD_IMAGES stream."""
        self.sequence += 1
        image = new if new is not None else old
        assert image is not None
        stream: dict[str, Any] = {
            "ApproximateCreationDateTime": Decimal(1_800_000_000 + self.sequence),
            "Keys": _dynamodb_json({"pk": image["pk"], "sk": image["sk"]}),
            "SequenceNumber": f"{self.sequence:021d}",
            "SizeBytes": 512,
            "StreamViewType": "NEW_AND_OLD_IMAGES",
        }
        if new is not None:
            stream["NewImage"] = _dynamodb_json(new)
        if old is not None:
            stream["OldImage"] = _dynamodb_json(old)
        return {
            "eventID": f"event-{self.sequence}",
            "eventName": event_name,
            "eventVersion": "1.1",
            "eventSource": "aws:dynamodb",
            "awsRegion": self.region,
            "dynamodb": stream,
            "eventSourceARN": self.arn,
        }

    def inserted(self, memory: tuple[str, Memory]) -> dict[str, Any]:
        team, written = memory
        return self.record("INSERT", new=self.item(team, written.id))


def _dynamodb_json(item: dict[str, Any]) -> dict[str, Any]:
    return {key: _serializer.serialize(value) for key, value in item.items()}


def _event(*records: dict[str, Any]) -> dict[str, Any]:
    return {"Records": list(records)}


@pytest.fixture
def stream(aws: Settings) -> Stream:
    # As deployed: the memory function leaves curation to the stream-fed curator.
    runtime.configure(aws.model_copy(update={"curation": "stream"}))
    description = boto3.client("dynamodb", region_name=aws.region).describe_table(
        TableName=aws.table(names.TABLE_MEMORIES)
    )
    return Stream(arn=description["Table"]["LatestStreamArn"], region=aws.region)


def _remember(
    team: str, title: str, body: str, tags: list[str] | None = None
) -> tuple[str, Memory]:
    principal = Principal(
        team=team, token_id="tok", token_name="t", scopes=frozenset({"memory"}), agent_id="a-1"
    )
    memory = build_memory_service().remember(
        principal, title=title, body=body, tags=tags or [], applies_to=[], confidence=None
    )
    assert memory.status == "pending"
    return team, memory


def _memories(team: str) -> dict[str, Memory]:
    store = DynamoMemoryStore(runtime.table(names.TABLE_MEMORIES))
    return {memory.id: memory for memory in store.iter_team(team)}


def _curate(event: dict[str, Any]) -> dict[str, Any]:
    response: dict[str, Any] = dict(handler(event, _Context()))
    return response


def test_a_duplicate_in_the_batch_is_merged_and_a_distinct_memory_is_filed(
    stream: Stream,
) -> None:
    # Given two pending memories with the same body (up to case and spacing) and a distinct one
    first = _remember("alpha", "Deploy freeze", "Deploys freeze on Fridays after 14:00.", ["ops"])
    again = _remember("alpha", "Friday freeze", "deploys  freeze on fridays after 14:00.", ["ci"])
    distinct = _remember("alpha", "Staging DB", "The staging database runs Postgres 16.")
    event = _event(*(stream.inserted(m) for m in (first, again, distinct)))

    # When the stream delivers their inserts to the curator
    response = _curate(event)

    # Then the first was merged into its duplicate, and every survivor is filed
    assert response == {"batchItemFailures": []}
    left = _memories("alpha")
    assert set(left) == {again[1].id, distinct[1].id}
    survivor = left[again[1].id]
    assert survivor.merged_from == [first[1].id]
    assert survivor.tags == ["ci", "ops"]
    assert survivor.status == "filed"
    assert left[distinct[1].id].status == "filed"
    assert left[distinct[1].id].merged_from == []


def test_records_that_are_not_a_pending_memory_are_skipped(stream: Stream) -> None:
    # Given a pending memory, and records about it that are not "a pending memory was written"
    team, pending = _remember("gamma", "Runbook", "Page the on-call engineer for sev-1 only.")
    image = stream.item(team, pending.id)
    filed_image = {k: v for k, v in image.items() if k != "status"}  # filed is the default
    alias_image = {**image, "sk": "KEY#runbook"}  # not a memory record
    event = _event(
        stream.record("MODIFY", new=filed_image, old=image),
        stream.record("INSERT", new=alias_image),
        stream.record("REMOVE", old=image),
    )

    # When the curator receives them
    response = _curate(event)

    # Then none failed and none was curated: the memory is still pending
    assert response == {"batchItemFailures": []}
    assert _memories(team)[pending.id].status == "pending"


def test_a_record_the_curator_fails_on_is_reported_and_the_rest_are_curated(
    stream: Stream, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # Given two pending memories, and DynamoDB failing every read of the second one
    ok = _remember("alpha", "Release train", "Releases ship every second Tuesday.")
    broken = _remember("beta", "Cache TTL", "The edge cache keeps pages for ten minutes.")
    real_get = DynamoMemoryStore.get

    def get(self: DynamoMemoryStore, team: str, memory_id: str) -> Memory | None:
        if memory_id == broken[1].id:
            raise ClientError(
                {"Error": {"Code": "InternalServerError", "Message": "try again"}}, "GetItem"
            )
        return real_get(self, team, memory_id)

    monkeypatch.setattr(DynamoMemoryStore, "get", get)
    failing = stream.inserted(broken)
    event = _event(stream.inserted(ok), failing)

    # When the stream delivers both inserts
    with caplog.at_level(logging.WARNING, logger="cairn"):
        response = _curate(event)

    # Then only the failing record is reported (Lambda retries from it), and the other is filed
    sequence = failing["dynamodb"]["SequenceNumber"]
    assert response == {"batchItemFailures": [{"itemIdentifier": sequence}]}
    monkeypatch.setattr(DynamoMemoryStore, "get", real_get)
    assert _memories("alpha")[ok[1].id].status == "filed"
    assert _memories("beta")[broken[1].id].status == "pending"
    # The failure's log line names the memory and the cause (its type: the text may quote it).
    [failure] = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert (failure.memory_id, failure.team, failure.error) == (broken[1].id, "beta", "ClientError")


def test_a_redelivered_batch_changes_nothing(stream: Stream) -> None:
    # Given a batch the curator has already handled (a duplicate merged, a memory filed)
    first = _remember("alpha", "Code review", "Every change needs one approving review.")
    again = _remember("alpha", "Reviews", "Every change needs one approving review.")
    other = _remember("alpha", "On-call", "On-call rotates weekly on Mondays.")
    event = _event(*(stream.inserted(m) for m in (first, again, other)))
    assert _curate(event) == {"batchItemFailures": []}
    before = stream.table.scan(ConsistentRead=True)["Items"]

    # When Lambda delivers the same records again
    response = _curate(event)

    # Then nothing fails and nothing changes
    assert response == {"batchItemFailures": []}
    after = stream.table.scan(ConsistentRead=True)["Items"]
    assert sorted(after, key=lambda i: str(i["sk"])) == sorted(before, key=lambda i: str(i["sk"]))
    assert len(_memories("alpha")) == 2


def _write(team: str, content: str, subject: str) -> tuple[str, Memory]:
    principal = Principal(
        team=team, token_id="tok", token_name="t", scopes=frozenset({"memory"}), agent_id="a-1"
    )
    memory = build_memory_service().lifecycle.write(
        principal, content=content, subject=subject, kind="fact"
    )
    return team, memory


def test_a_filed_memory_is_checked_for_conflicts_once_even_when_replayed(stream: Stream) -> None:
    # Given two structured memories that contradict each other, written with no inline detection
    _write("alpha", "The staging database is Postgres 14.", "staging db")
    second = _write("alpha", "The staging database is Postgres 16.", "staging db")
    assert build_finding_store().get("alpha", "x") is None
    event = _event(stream.inserted(second))

    # When the stream delivers the second write, and then delivers it again
    assert _curate(event) == {"batchItemFailures": []}
    found = list(build_finding_store().iter_team("alpha"))
    assert _curate(event) == {"batchItemFailures": []}

    # Then one conflict was recorded, and the replay changed nothing
    assert [f.kind for f in found] == ["conflict"]
    assert "number" in found[0].signals
    assert list(build_finding_store().iter_team("alpha")) == found
