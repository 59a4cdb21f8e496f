"""Workflow and sync skeletons, observability and the stack outputs (search: test_search_infra)."""

from __future__ import annotations

import json

import pytest
from aws_cdk.assertions import Match

from shared.config import names
from tests.infra.support import RETENTION_DAYS, Synth, WorkflowsOnly

pytestmark = pytest.mark.infra


def test_the_dispatch_queue_is_encrypted_tls_only_with_a_dead_letter_queue(synth: Synth) -> None:
    queues = synth.of_type("AWS::SQS::Queue")
    dispatch = synth.logical_id(synth.stack.workflows.dispatch_queue)
    dlq = synth.logical_id(synth.stack.workflows.dead_letter_queue)
    workers = {synth.logical_id(q) for q in synth.stack.workers.dead_letter_queues.values()}
    knowledge = synth.stack.knowledge
    workers |= {synth.logical_id(knowledge.queue), synth.logical_id(knowledge.dead_letter_queue)}
    workers.add(synth.logical_id(synth.stack.events.dead_letter_queue))
    # Every queue of the stack is checked below: these two and the workers' dead-letter queues.
    assert set(queues) == {dispatch, dlq, *workers}
    redrive = queues[dispatch]["Properties"]["RedrivePolicy"]
    assert redrive["deadLetterTargetArn"] == {"Fn::GetAtt": [dlq, "Arn"]}
    assert redrive["maxReceiveCount"] >= 1
    for logical_id, queue in queues.items():
        assert queue["Properties"]["SqsManagedSseEnabled"] is True
        synth.template.has_resource_properties(
            "AWS::SQS::QueuePolicy",
            {
                "Queues": [{"Ref": logical_id}],
                "PolicyDocument": {
                    "Statement": Match.array_with(
                        [
                            Match.object_like(
                                {
                                    "Effect": "Deny",
                                    "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                                }
                            )
                        ]
                    )
                },
            },
        )


@pytest.mark.parametrize(("env", "days"), RETENTION_DAYS.items())
def test_the_state_machine_log_group_is_ready(
    request: pytest.FixtureRequest, env: str, days: int
) -> None:
    synth: Synth = request.getfixturevalue(env)
    log_group = synth.resources[synth.logical_id(synth.stack.workflows.log_group)]
    # The name takes the stack's id (tests/infra/test_recreate.py): a join of its parts.
    assert "/aws/vendedlogs/states/" in json.dumps(log_group["Properties"]["LogGroupName"])
    assert log_group["Properties"]["RetentionInDays"] == days


def test_add_state_machine_logs_everything_but_execution_data_and_traces(
    workflows_stack: WorkflowsOnly,
) -> None:
    # Given the workflows construct in a stack of its own, with one state machine added
    stack, workflows = workflows_stack.stack, workflows_stack.workflows
    # Then the machine is Standard, traced, and logs to the shared log group
    log_group = stack.resolve(workflows.log_group.log_group_arn)
    workflows_stack.template.has_resource_properties(
        "AWS::StepFunctions::StateMachine",
        {
            "StateMachineType": "STANDARD",
            "TracingConfiguration": {"Enabled": True},
            "LoggingConfiguration": {
                "Level": "ALL",
                "IncludeExecutionData": False,
                "Destinations": [{"CloudWatchLogsLogGroup": {"LogGroupArn": log_group}}],
            },
        },
    )


def test_the_sync_schedule_group_and_its_scheduler_role_exist(synth: Synth) -> None:
    group = synth.resources[synth.logical_id(synth.stack.sync.schedule_group)]
    assert group["Properties"]["Name"].endswith("-sync")
    role = synth.resources[synth.logical_id(synth.stack.sync.scheduler_role)]
    (statement,) = role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert statement["Principal"] == {"Service": "scheduler.amazonaws.com"}
    assert statement["Action"] == "sts:AssumeRole"


def test_only_schedules_of_the_sync_group_may_assume_the_scheduler_role(synth: Synth) -> None:
    # Confused-deputy guard: Scheduler presents the schedule group's ARN as aws:SourceArn.
    role = synth.resources[synth.logical_id(synth.stack.sync.scheduler_role)]
    (statement,) = role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    group = synth.logical_id(synth.stack.sync.schedule_group)
    assert statement["Condition"] == {
        "StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}},
        "ArnEquals": {"aws:SourceArn": {"Fn::GetAtt": [group, "Arn"]}},
    }


def test_alarms_cover_api_5xx_function_errors_and_throttles_and_table_throttles(
    synth: Synth,
) -> None:
    alarms = synth.of_type("AWS::CloudWatch::Alarm").values()
    metrics = {a["Properties"].get("MetricName") for a in alarms}
    # REST API / function URL (Lambda's metric of the gateway alias) / HTTP API
    api_5xx = {"rest": "5XXError", "url": "Url5xxCount"}.get(synth.stack.api.kind, "5xx")
    assert {api_5xx, "Errors", "Throttles"} <= metrics
    function_alarms = [
        a
        for a in alarms
        if a["Properties"].get("Namespace") == "AWS/Lambda"
        and a["Properties"].get("MetricName") != "Url5xxCount"
    ]
    assert len(function_alarms) == 2 * len(synth.functions())
    table_alarms = [a for a in alarms if "ReadThrottleEvents" in json.dumps(a["Properties"])]
    assert len(table_alarms) == len(synth.stack.data.tables)


def test_every_alarm_notifies_the_encrypted_alarm_topic(synth: Synth) -> None:
    (topic_id, topic) = next(iter(synth.of_type("AWS::SNS::Topic").items()))
    assert "KmsMasterKeyId" in topic["Properties"]
    key = synth.resources[topic["Properties"]["KmsMasterKeyId"]["Fn::GetAtt"][0]]
    assert key["Properties"]["EnableKeyRotation"] is True
    assert "cloudwatch.amazonaws.com" in json.dumps(key["Properties"]["KeyPolicy"])
    for alarm in synth.of_type("AWS::CloudWatch::Alarm").values():
        assert alarm["Properties"]["AlarmActions"] == [{"Ref": topic_id}]


def test_cloudwatch_of_this_account_may_publish_to_the_alarm_topic(synth: Synth) -> None:
    # Without an allow, the TLS-only policy leaves CloudWatch unable to deliver any alarm.
    (topic_id, _) = next(iter(synth.of_type("AWS::SNS::Topic").items()))
    (policy,) = synth.of_type("AWS::SNS::TopicPolicy").values()
    assert policy["Properties"]["Topics"] == [{"Ref": topic_id}]
    statements = policy["Properties"]["PolicyDocument"]["Statement"]
    allow = [s for s in statements if s["Effect"] == "Allow"]
    assert allow == [
        {
            "Sid": "CloudWatchAlarmsOfThisAccount",
            "Effect": "Allow",
            "Principal": {"Service": "cloudwatch.amazonaws.com"},
            "Action": "sns:Publish",
            "Resource": {"Ref": topic_id},
            "Condition": {"StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}},
        }
    ]
    assert any(s["Effect"] == "Deny" and "aws:SecureTransport" in json.dumps(s) for s in statements)


def test_the_dashboard_shows_requests_errors_latency_throttles_and_capacity(
    synth: Synth,
) -> None:
    (dashboard,) = synth.of_type("AWS::CloudWatch::Dashboard").values()
    body = json.dumps(dashboard["Properties"]["DashboardBody"])
    for metric in (
        "Count",
        "5XXError" if synth.stack.api.kind == "rest" else "5xx",
        "Latency",
        "Invocations",
        "Errors",
        "Throttles",
        "Duration",
        "p99",
        "p50",
        "ConsumedReadCapacityUnits",
        "ConsumedWriteCapacityUnits",
        "ReadThrottleEvents",
    ):
        assert metric in body, metric


def test_outputs_use_the_stable_names_of_the_names_module(synth: Synth) -> None:
    outputs = synth.document["Outputs"]
    expected = {
        value
        for key, value in vars(names.Outputs).items()
        if not key.startswith("_") and isinstance(value, str)
    }
    oauth = {
        names.Outputs.OAUTH_ISSUER,
        names.Outputs.OAUTH_CLIENT_ID,
        names.Outputs.OAUTH_LOGIN_DOMAIN,
    }
    if synth.stack.oauth is None:  # only with -c oauth=true (the prod synth here)
        assert not oauth & set(outputs)
        expected -= oauth
    if synth.stack.api.origin_url is None:  # only behind CloudFront (prod here)
        assert names.Outputs.ORIGIN_URL not in outputs
        expected.discard(names.Outputs.ORIGIN_URL)
    assert expected <= set(outputs)


def test_the_mcp_url_output_ends_in_mcp(dev: Synth, prod: Synth) -> None:
    assert json.dumps(dev.document["Outputs"][names.Outputs.MCP_URL]).endswith('/mcp"]]}}')
    assert prod.document["Outputs"][names.Outputs.MCP_URL]["Value"] == (
        "https://mcp.example.com/mcp"
    )
