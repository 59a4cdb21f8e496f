"""Domain events: the stack's bus, the publisher fed by the coordination stream, its reach."""

from __future__ import annotations

import json
from typing import Any

import pytest

from infra.events import PUBLISHER_BATCH_SIZE, PUBLISHER_RETRIES
from shared.config import names
from shared.config.names import Env
from tests.infra.support import Synth

pytestmark = pytest.mark.infra

PUBLISHER = names.WORKER_EVENT_PUBLISHER


def _mapping(synth: Synth) -> dict[str, Any]:
    (properties,) = [
        mapping["Properties"]
        for mapping in synth.of_type("AWS::Lambda::EventSourceMapping").values()
        if mapping["Properties"]["FunctionName"] == {"Ref": synth.functions()[PUBLISHER]}
    ]
    return dict(properties)


def _bus(synth: Synth) -> str:
    return synth.logical_id(synth.stack.events.bus)


def test_each_stack_has_its_own_bus_with_an_archive_of_cairn_events(synth: Synth) -> None:
    (bus,) = synth.of_type("AWS::Events::EventBus").values()
    assert bus["Properties"]["Name"] == f"{synth.stack.config.stack_name}-events"
    (archive,) = synth.of_type("AWS::Events::Archive").values()
    assert archive["Properties"]["SourceArn"] == {"Fn::GetAtt": [_bus(synth), "Arn"]}
    assert archive["Properties"]["EventPattern"] == {"source": ["cairn"]}
    assert archive["Properties"]["RetentionDays"] >= 7
    outputs = synth.document["Outputs"]
    assert outputs[names.Outputs.EVENT_BUS_NAME]["Value"] == {"Ref": _bus(synth)}
    assert outputs[names.Outputs.EVENT_BUS_ARN]["Value"] == {"Fn::GetAtt": [_bus(synth), "Arn"]}


def test_the_publisher_reads_the_coordination_stream_from_the_oldest_record(
    synth: Synth,
) -> None:
    mapping = _mapping(synth)
    coordination = synth.logical_id(synth.stack.data.table(names.TABLE_COORDINATION))
    assert mapping["EventSourceArn"] == {"Fn::GetAtt": [coordination, "StreamArn"]}
    assert mapping["StartingPosition"] == "TRIM_HORIZON"
    assert mapping["BatchSize"] == PUBLISHER_BATCH_SIZE == 10  # PutEvents' limit


def test_the_publisher_is_invoked_only_for_cairn_events_inserted_into_the_log(
    synth: Synth,
) -> None:
    (only,) = _mapping(synth)["FilterCriteria"]["Filters"]
    assert json.loads(only["Pattern"]) == {
        "eventName": ["INSERT"],
        "dynamodb": {
            "Keys": {"sk": {"S": [{"prefix": "EVENT#"}]}},
            "NewImage": {"event_type": {"S": [{"prefix": "cairn."}]}},
        },
    }


def test_a_refused_batch_is_retried_from_its_first_refusal_then_dead_lettered(
    synth: Synth,
) -> None:
    mapping = _mapping(synth)
    queue = synth.logical_id(synth.stack.events.dead_letter_queue)
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert mapping["BisectBatchOnFunctionError"] is True
    assert mapping["MaximumRetryAttempts"] == PUBLISHER_RETRIES
    assert mapping["DestinationConfig"] == {
        "OnFailure": {"Destination": {"Fn::GetAtt": [queue, "Arn"]}}
    }
    topic = synth.logical_id(synth.stack.observability.topic)
    synth.template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "Namespace": "AWS/SQS",
            "Dimensions": [{"Name": "QueueName", "Value": {"Fn::GetAtt": [queue, "QueueName"]}}],
            "AlarmActions": [{"Ref": topic}],
        },
    )


def test_only_the_publisher_may_put_events_and_only_on_the_bus(synth: Synth) -> None:
    bus_arn = {"Fn::GetAtt": [_bus(synth), "Arn"]}
    for function in synth.functions():
        puts = [s for s in synth.statements_of(function) if "events:PutEvents" in json.dumps(s)]
        if function == PUBLISHER:
            assert [s["Resource"] for s in puts] == [bus_arn]
        else:
            assert not puts, function
    environment = synth.resources[synth.functions()[PUBLISHER]]["Properties"]["Environment"]
    assert environment["Variables"][Env.EVENT_BUS_NAME] == {"Ref": _bus(synth)}


def test_the_publisher_reaches_no_table_only_the_coordination_stream(synth: Synth) -> None:
    coordination = synth.logical_id(synth.stack.data.table(names.TABLE_COORDINATION))
    for statement in synth.statements_of(PUBLISHER):
        actions = statement["Action"] if isinstance(statement["Action"], list) else []
        actions = actions or [statement["Action"]]
        for action in actions:
            if action.startswith("dynamodb:") and action != "dynamodb:ListStreams":
                assert action in {
                    "dynamodb:DescribeStream",
                    "dynamodb:GetRecords",
                    "dynamodb:GetShardIterator",
                }, statement
                assert statement["Resource"] == {"Fn::GetAtt": [coordination, "StreamArn"]}
