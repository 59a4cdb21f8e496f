"""Domain events, produced by real tool calls through the gateway, on both paths:

- **local** (`storage = "sqlite"`, as `make serve`): the events are in the team's event log,
  read back with `event.poll`;
- **AWS** (DynamoDB on moto): the same calls append to the log in the coordination table; the
  publisher reads that table's stream (moto's DynamoDB Streams), puts the events on a bus
  (moto's EventBridge), and a rule on `source: cairn` + the team delivers them to an SQS
  queue, which the test reads.

Either way the test sees `(detail-type, detail)` pairs, so one set of assertions covers both.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto.core.models import DEFAULT_ACCOUNT_ID
from moto.dynamodbstreams.models import dynamodbstreams_backends

from shared import runtime
from shared.config import names
from shared.config.settings import Settings
from shared.domain_events.adapters.eventbridge import EventBridgeSink
from shared.domain_events.models import DETAIL_TYPES, SOURCE, Kind
from shared.domain_events.publisher import publish_records
from shared.memory.wiring import build_detection_queue
from shared.orchestrator.tasks import service as task_service
from tests.fake_aws import fake_aws
from tests.functional.conftest import PEPPER, Harness, ok
from tests.unit.test_handoff_sections import VALID

BUDGET_USD = 1.0
BUS = "cairn-test-events"
ONE_STEP = {"steps": [{"name": "only"}]}

Received = list[tuple[str, dict[str, Any]]]


@dataclass
class Events:
    """What reached the team's consumers so far, as (detail-type, detail)."""

    harness: Harness
    collect: Callable[[], Received]
    seen: Received = field(default_factory=list)

    def of(self, detail_type: str) -> list[dict[str, Any]]:
        self.seen = self.collect()
        return [detail for kind, detail in self.seen if kind == detail_type]


def _rule_into_queue(eventbridge: Any, sqs: Any, rule: str, pattern: dict[str, Any]) -> str:
    """A team's own infrastructure: a rule `rule` for `pattern` on the stack's bus, into a new
    SQS queue (named after the rule); that queue's URL."""
    queue_url: str = sqs.create_queue(QueueName=rule)["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])[
        "Attributes"
    ]["QueueArn"]
    eventbridge.put_rule(Name=rule, EventBusName=BUS, EventPattern=json.dumps(pattern))
    eventbridge.put_targets(Rule=rule, EventBusName=BUS, Targets=[{"Id": "q", "Arn": queue_arn}])
    return queue_url


def _harness(settings: Settings) -> Harness:
    runtime.configure(settings)
    return Harness.over(settings)


def _local(tmp_path: Path) -> Iterator[Events]:
    settings = Settings(
        environment="test",
        storage="sqlite",
        token_pepper=PEPPER,
        data_dir=tmp_path,
        cost_budget_usd=BUDGET_USD,
    )
    harness = _harness(settings)
    reader = harness.token(team="alpha", scopes=("event.read",))

    def collect() -> Received:
        reply = harness.call(reader, "event.poll", {"limit": 500})
        assert reply["isError"] is False, reply
        polled: list[dict[str, Any]] = reply["events"]
        return [
            (DETAIL_TYPES[Kind(e["event_type"])], e["payload"])
            for e in polled
            if e["event_type"].startswith("cairn.")
        ]

    yield Events(harness, collect)


def _aws(tmp_path: Path) -> Iterator[Events]:
    with fake_aws():
        settings = Settings(
            environment="test", token_pepper=PEPPER, data_dir=tmp_path, cost_budget_usd=BUDGET_USD
        )
        harness = _harness(settings)
        region = settings.region
        dynamodb = boto3.client("dynamodb", region_name=region)
        # moto 5.2 routes the DynamoDB Streams API to its DynamoDB handler (they share a
        # signing name), so the stream is read from moto's streams backend itself: the same
        # records, in the same JSON, a Lambda event source mapping delivers.
        streams = dynamodbstreams_backends[DEFAULT_ACCOUNT_ID][region]
        eventbridge = boto3.client("events", region_name=region)
        sqs = boto3.client("sqs", region_name=region)
        # The team's own infrastructure: a rule for its events on the stack's bus, into SQS.
        eventbridge.create_event_bus(Name=BUS)
        queue_url = _rule_into_queue(
            eventbridge, sqs, "alpha-to-sqs", {"source": [SOURCE], "detail": {"team": ["alpha"]}}
        )
        sink = EventBridgeSink(eventbridge, BUS)
        table = settings.table(names.TABLE_COORDINATION)
        stream_arn = dynamodb.describe_table(TableName=table)["Table"]["LatestStreamArn"]
        published: set[str] = set()
        received: Received = []

        def collect() -> Received:
            # The publisher's part: every new stream record, in order, through the sink.
            records: list[dict[str, Any]] = []
            for shard in streams.describe_stream(stream_arn)["Shards"]:
                iterator = streams.get_shard_iterator(
                    stream_arn, shard["ShardId"], "TRIM_HORIZON", None
                )
                records += streams.get_records(iterator.arn, 1000)["Records"]
            fresh = [r for r in records if r["dynamodb"]["SequenceNumber"] not in published]
            assert publish_records(fresh, sink) == []
            published.update(r["dynamodb"]["SequenceNumber"] for r in fresh)
            # The consumer's part: what the rule delivered to the team's queue.
            while True:
                messages = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10).get(
                    "Messages", []
                )
                if not messages:
                    break
                for message in messages:
                    event = json.loads(message["Body"])
                    assert event["source"] == SOURCE
                    received.append((event["detail-type"], event["detail"]))
                    sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
            return list(received)

        yield Events(harness, collect)


@pytest.fixture(params=["local", "aws"])
def events(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Events]:
    path = _local if request.param == "local" else _aws
    try:
        yield from path(tmp_path)
    finally:
        runtime.configure(Settings())


def _failed(harness: Harness, token: str, tool: str, arguments: dict[str, Any]) -> None:
    assert harness.call(token, tool, arguments)["isError"] is True


def _envelope(detail: dict[str, Any], actor: str) -> None:
    assert detail["version"] == "1"
    assert detail["id"].startswith("evt-")
    assert detail["team"] == "alpha"
    assert detail["actor"] == actor
    assert detail["time"].endswith("+00:00")


def test_a_stored_and_a_claimed_handoff_are_events_and_a_refused_claim_is_none(
    events: Events,
) -> None:
    h = events.harness
    author = h.token(team="alpha", agent_id="author")
    taker = h.token(team="alpha", agent_id="taker")
    late = h.token(team="alpha", agent_id="late")
    _failed(h, author, "store_handoff", {"title": "t", "document_md": "# no sections"})
    stored = ok(h, author, "store_handoff", {"title": "billing export", "document_md": VALID})[
        "handoff"
    ]
    ok(h, taker, "claim_handoff", {"handoff_id": stored["id"]})
    _failed(h, late, "claim_handoff", {"handoff_id": stored["id"]})

    (created,) = events.of("Handoff Stored")
    (claimed,) = events.of("Handoff Claimed")

    _envelope(created, "author")
    assert created["handoff_id"] == stored["id"]
    _envelope(claimed, "taker")
    assert (claimed["handoff_id"], claimed["created_by"]) == (stored["id"], "author")


def test_a_task_is_created_claimed_requeued_completed_or_failed(
    events: Events, monkeypatch: pytest.MonkeyPatch
) -> None:
    h = events.harness
    boss = h.token(team="alpha", agent_id="boss")
    first = h.token(team="alpha", agent_id="first")
    second = h.token(team="alpha", agent_id="second")
    done = ok(h, boss, "task.create", {"name": "build"})
    broken = ok(h, boss, "task.create", {"name": "deploy"})
    # A lease that ends at once: the next claim takes the task over (the requeue).
    monkeypatch.setattr(task_service, "LEASE_SECONDS", 0)
    ok(h, first, "task.claim", {"task_id": done["id"]})
    monkeypatch.setattr(task_service, "LEASE_SECONDS", 900)
    ok(h, second, "task.claim", {"task_id": done["id"]})
    _failed(h, first, "task.complete", {"task_id": done["id"]})  # fenced out: no event
    ok(h, second, "task.complete", {"task_id": done["id"], "output_summary": "secret-ish"})
    ok(h, first, "task.claim", {"task_id": broken["id"]})
    ok(h, first, "task.fail", {"task_id": broken["id"], "error_message": "disk full"})

    created = events.of("Task Created")
    claimed = events.of("Task Claimed")
    (requeued,) = events.of("Task Requeued")
    (completed,) = events.of("Task Completed")
    (failed,) = events.of("Task Failed")

    assert [c["task_id"] for c in created] == [done["id"], broken["id"]]
    _envelope(created[0], "boss")
    assert created[0]["status"] == "pending"
    assert [(c["task_id"], c["actor"], c["fence"]) for c in claimed] == [
        (done["id"], "first", 1),
        (done["id"], "second", 2),
        (broken["id"], "first", 1),
    ]
    _envelope(requeued, "second")
    assert (requeued["task_id"], requeued["previous_holder"]) == (done["id"], "first")
    _envelope(completed, "second")
    assert (completed["task_id"], completed["status"]) == (done["id"], "completed")
    _envelope(failed, "first")
    assert (failed["task_id"], failed["status"]) == (broken["id"], "failed")
    assert "secret-ish" not in json.dumps(events.seen)
    assert "disk full" not in json.dumps(events.seen)


def _step(h: Harness, agent: str, verb: str) -> str:
    (task,) = ok(h, agent, "task.poll", {})["tasks"]
    ok(h, agent, "task.claim", {"task_id": task["id"]})
    ok(h, agent, f"task.{verb}", {"task_id": task["id"]})
    return str(task["id"])


def test_workflow_executions_start_succeed_fail_and_cancel(events: Events) -> None:
    h = events.harness
    boss = h.token(team="alpha", agent_id="boss")
    agent = h.token(team="alpha", agent_id="runner")
    ids = [
        ok(h, boss, "workflow.create", {"name": name, "definition": ONE_STEP})["workflow"]["id"]
        for name in ("ok", "bad", "stop")
    ]
    ok(h, boss, "workflow.start", {"workflow_id": ids[0]})
    step_task = _step(h, agent, "complete")
    ok(h, boss, "workflow.start", {"workflow_id": ids[1]})
    _step(h, agent, "fail")
    ok(h, boss, "workflow.start", {"workflow_id": ids[2]})
    _failed(h, boss, "workflow.start", {"workflow_id": ids[2]})  # already running: no event
    ok(h, boss, "workflow.cancel", {"workflow_id": ids[2]})

    started = events.of("Workflow Execution Started")
    (succeeded,) = events.of("Workflow Execution Succeeded")
    (failed,) = events.of("Workflow Execution Failed")
    (cancelled,) = events.of("Workflow Execution Cancelled")

    assert [s["workflow_id"] for s in started] == ids
    _envelope(started[0], "boss")
    assert started[0]["status"] == "running"
    assert started[0]["workflow_version"] == 1
    assert (succeeded["workflow_id"], succeeded["status"]) == (ids[0], "completed")
    assert succeeded["execution_id"] == started[0]["execution_id"]
    assert (failed["workflow_id"], failed["status"]) == (ids[1], "failed")
    assert (cancelled["workflow_id"], cancelled["status"]) == (ids[2], "cancelled")
    # Workflow steps are tasks: created by the engine, announced like any other.
    step_created = [c for c in events.of("Task Created") if c["task_id"] == step_task]
    assert step_created[0]["workflow_id"] == ids[0]


def test_a_detected_conflict_and_a_proposal_awaiting_review_are_events(events: Events) -> None:
    h = events.harness
    writer = h.token(team="alpha", agent_id="writer")
    text = "Production deploys are frozen on Fridays."
    a = ok(h, writer, "memory_write", {"content": text, "subject": "freeze"})["memory"]
    b = ok(
        h,
        writer,
        "memory_write",
        {"content": "Production deploys are not frozen on Fridays.", "subject": "freeze"},
    )["memory"]
    detection = build_detection_queue()
    assert detection is not None
    detection.drain()
    proposal = ok(h, writer, "memory_propose", {"content": "The VPN moved to vpn2."})["memory"]

    (conflict,) = events.of("Memory Conflict Detected")
    (awaiting,) = events.of("Memory Proposal Awaiting Review")

    _envelope(conflict, "curator")
    assert sorted(conflict["memory_ids"]) == sorted([a["id"], b["id"]])
    assert conflict["finding_id"].startswith("cfl_")
    _envelope(awaiting, "writer")
    assert awaiting["memory_id"] == proposal["id"]
    assert text not in json.dumps(events.seen)
    assert "vpn2" not in json.dumps(events.seen)


def test_budget_exceeded_once_when_the_spend_crosses_the_limit(events: Events) -> None:
    h = events.harness
    agent = h.token(team="alpha", agent_id="spender")
    report = {"agent_id": "spender", "model": "m", "provider": "p"}
    ok(h, agent, "cost.report", {**report, "estimated_cost_usd": 0.6})
    assert events.of("Budget Exceeded") == []
    ok(h, agent, "cost.report", {**report, "estimated_cost_usd": 0.6})
    ok(h, agent, "cost.report", {**report, "estimated_cost_usd": 0.6})  # still over: no repeat

    (exceeded,) = events.of("Budget Exceeded")

    _envelope(exceeded, "spender")
    assert exceeded["limit_usd"] == BUDGET_USD
    assert exceeded["spent_usd"] == pytest.approx(1.2)
    assert (exceeded["period"], exceeded["agent_id"]) == ("30d", "spender")


def test_an_agent_cannot_forge_a_cairn_event_and_no_event_carries_a_secret(
    events: Events,
) -> None:
    h = events.harness
    secret = h.token(team="alpha", agent_id="author")
    other_team = h.token(team="beta", agent_id="outsider")
    forged = h.call(
        secret, "event.publish", {"event_type": "cairn.task.completed", "payload": {"x": 1}}
    )
    ok(h, secret, "store_handoff", {"title": "billing export", "document_md": VALID})
    ok(h, other_team, "store_handoff", {"title": "theirs", "document_md": VALID})

    assert forged["isError"] is True
    assert forged["error"]["field"] == "event_type"
    (only,) = events.of("Handoff Stored")  # the other team's rule/log sees its own only
    assert only["team"] == "alpha"
    everything = json.dumps(events.seen)
    assert secret not in everything
    assert other_team not in everything
    assert "cairn_sk_" not in everything
    assert "billing export" not in everything
    assert "Export invoices" not in everything


class _Context:
    function_name = "cairn-event-publisher"
    memory_limit_in_mb = 1024
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:cairn-event-publisher"
    aws_request_id = "req-publisher"


def test_the_publisher_handler_forwards_a_stream_batch_to_the_bus(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The deployed entry point: a Lambda-shaped batch of the coordination stream's records
    (as the mapping's filter lets through) in, the team's rule's queue out."""
    monkeypatch.setenv(names.Env.EVENT_BUS_NAME, BUS)
    with fake_aws():
        settings = Settings(environment="test", token_pepper=PEPPER, data_dir=tmp_path)
        harness = _harness(settings)
        eventbridge = boto3.client("events", region_name=settings.region)
        sqs = boto3.client("sqs", region_name=settings.region)
        eventbridge.create_event_bus(Name=BUS)
        queue_url = _rule_into_queue(
            eventbridge, sqs, "handoffs", {"source": [SOURCE], "detail-type": ["Handoff Stored"]}
        )
        for team in ("alpha", "beta"):
            token = harness.token(team=team, agent_id=f"{team}-agent")
            ok(harness, token, "store_handoff", {"title": "t", "document_md": VALID})
        table = settings.table(names.TABLE_COORDINATION)
        stream_arn = boto3.client("dynamodb", region_name=settings.region).describe_table(
            TableName=table
        )["Table"]["LatestStreamArn"]
        streams = dynamodbstreams_backends[DEFAULT_ACCOUNT_ID][settings.region]
        (shard,) = streams.describe_stream(stream_arn)["Shards"]
        iterator = streams.get_shard_iterator(stream_arn, shard["ShardId"], "TRIM_HORIZON", None)
        records = streams.get_records(iterator.arn, 1000)["Records"]
        from functions.event_publisher import handler as publisher

        try:
            answer = publisher.handler({"Records": records}, _Context())
            messages = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10)["Messages"]
        finally:
            runtime.configure(Settings())

    assert answer == {"batchItemFailures": []}
    details = sorted((json.loads(m["Body"])["detail"] for m in messages), key=lambda d: d["team"])
    assert [(d["team"], d["actor"]) for d in details] == [
        ("alpha", "alpha-agent"),
        ("beta", "beta-agent"),
    ]
