"""Knowledge: the enrichment queue, its DLQ and alarm, the capture routes, the webhook secret
and the CI pull schedule, each reachable only by what needs it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from infra.knowledge import (
    BATCH_SIZE,
    CI_PULL_EVENT,
    ENV_QUEUE_URL,
    ENV_WEBHOOK_SECRET_ARN,
    MAX_RECEIVES,
)
from shared.config import names
from tests.infra.support import Synth

pytestmark = pytest.mark.infra
GATEWAY = "gateway"


def _env(synth: Synth, function: str) -> dict[str, Any]:
    variables: dict[str, Any] = synth.resources[synth.functions()[function]]["Properties"][
        "Environment"
    ]["Variables"]
    return variables


def test_the_enrichment_queue_is_fifo_encrypted_and_dead_letters_after_three_receives(
    synth: Synth,
) -> None:
    knowledge = synth.stack.knowledge
    queue = synth.resources[synth.logical_id(knowledge.queue)]["Properties"]
    dead = synth.resources[synth.logical_id(knowledge.dead_letter_queue)]["Properties"]
    assert queue["FifoQueue"] is True
    assert dead["FifoQueue"] is True
    assert queue["SqsManagedSseEnabled"] is True
    assert queue["RedrivePolicy"]["maxReceiveCount"] == MAX_RECEIVES == 3
    assert queue["RedrivePolicy"]["deadLetterTargetArn"] == {
        "Fn::GetAtt": [synth.logical_id(knowledge.dead_letter_queue), "Arn"]
    }


def test_the_worker_is_fed_by_the_queue_with_partial_batch_failures(synth: Synth) -> None:
    worker = synth.functions()[names.WORKER_KNOWLEDGE_ENRICHER]
    queue = synth.logical_id(synth.stack.knowledge.queue)
    (mapping,) = [
        m["Properties"]
        for m in synth.of_type("AWS::Lambda::EventSourceMapping").values()
        if m["Properties"]["FunctionName"] == {"Ref": worker}
    ]
    assert mapping["EventSourceArn"] == {"Fn::GetAtt": [queue, "Arn"]}
    assert mapping["BatchSize"] == BATCH_SIZE
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]


def test_the_dead_letter_queue_raises_an_alarm(synth: Synth) -> None:
    dead = synth.logical_id(synth.stack.knowledge.dead_letter_queue)
    alarms = [
        a["Properties"]
        for a in synth.of_type("AWS::CloudWatch::Alarm").values()
        if any(
            d.get("Value") == {"Fn::GetAtt": [dead, "QueueName"]}
            for d in a["Properties"].get("Dimensions", [])
        )
    ]
    assert len(alarms) == 1
    assert alarms[0]["Threshold"] == 1


def test_only_the_knowledge_functions_send_to_the_queue_and_read_the_webhook_secret(
    synth: Synth,
) -> None:
    queue = synth.logical_id(synth.stack.knowledge.queue)
    secret = synth.logical_id(synth.stack.knowledge.webhook_secrets)
    group = names.GROUP_KNOWLEDGE
    assert "sqs:SendMessage" in synth.actions_on(group, queue)
    assert "secretsmanager:GetSecretValue" in synth.actions_on(group, secret)
    for other in (*names.TOOL_GROUPS, GATEWAY):
        producer = other in (names.GROUP_ORCHESTRATOR, names.GROUP_WORKFLOWS)
        if other != group and not producer:  # producers: see their own test
            assert "sqs:SendMessage" not in synth.actions_on(other, queue), other
        if other != group:
            assert not synth.actions_on(other, secret), other
    assert _env(synth, group)[ENV_QUEUE_URL] == {"Ref": queue}
    assert _env(synth, group)[ENV_WEBHOOK_SECRET_ARN] == {"Ref": secret}


def test_the_knowledge_functions_reach_only_the_knowledge_table(synth: Synth) -> None:
    knowledge = synth.logical_id(synth.stack.data.table(names.TABLE_KNOWLEDGE))
    for function in (names.GROUP_KNOWLEDGE, names.WORKER_KNOWLEDGE_ENRICHER):
        tables = {
            logical_id
            for logical_id, table in synth.stack.data.tables.items()
            if synth.actions_on(function, synth.logical_id(table))
        }
        assert tables == {names.TABLE_KNOWLEDGE}, function
    assert not synth.actions_on(GATEWAY, knowledge)


def test_the_capture_routes_go_to_the_gateway(synth: Synth) -> None:
    if synth.stack.api.kind == "url":
        # The gateway's function URL takes every path: nothing to route, nothing routed.
        assert synth.stack.knowledge.routes == []
        synth.template.resource_count_is("AWS::ApiGatewayV2::Route", 0)
        return
    if synth.stack.api.kind == "http":
        keys = {
            r["Properties"]["RouteKey"] for r in synth.of_type("AWS::ApiGatewayV2::Route").values()
        }
        assert {"POST /ingest/events", "POST /hooks/github/{team}"} <= keys
        return
    paths = {
        r["Properties"]["PathPart"] for r in synth.of_type("AWS::ApiGateway::Resource").values()
    }
    assert {"ingest", "events", "hooks", "github", "{team}"} <= paths
    posts = [
        m["Properties"]
        for m in synth.of_type("AWS::ApiGateway::Method").values()
        if m["Properties"]["HttpMethod"] == "POST"
    ]
    assert len(posts) >= 3  # /mcp, /ingest/events, /hooks/github/{team}


def test_the_ci_pull_runs_on_a_schedule_in_the_sync_group(synth: Synth) -> None:
    (schedule,) = [
        s["Properties"]
        for s in synth.of_type("AWS::Scheduler::Schedule").values()
        if json.loads(s["Properties"]["Target"]["Input"]) == CI_PULL_EVENT
    ]
    worker = synth.functions()[names.WORKER_KNOWLEDGE_ENRICHER]
    assert schedule["ScheduleExpression"].startswith("rate(")
    assert schedule["Target"]["Arn"] == {"Fn::GetAtt": [worker, "Arn"]}


@pytest.mark.parametrize("producer", [names.GROUP_ORCHESTRATOR, names.GROUP_WORKFLOWS])
def test_the_orchestrator_may_write_events_and_queue_them_but_not_read_knowledge(
    synth: Synth, producer: str
) -> None:
    # Finished tasks (orchestrator) and ended workflows (workflows: a cancel) become events.
    knowledge = synth.logical_id(synth.stack.data.table(names.TABLE_KNOWLEDGE))
    queue = synth.logical_id(synth.stack.knowledge.queue)
    actions = synth.actions_on(producer, knowledge)
    assert "dynamodb:PutItem" in actions
    assert not {a for a in actions if a in ("dynamodb:Query", "dynamodb:Scan", "dynamodb:GetItem")}
    assert "sqs:SendMessage" in synth.actions_on(producer, queue)
    assert _env(synth, producer)[ENV_QUEUE_URL] == {"Ref": queue}
