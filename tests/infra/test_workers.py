"""Workers: the curator, fed by the memories table's stream, with its reach, DLQ and alarm."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk.assertions import Match

from functions.curator import handler as curator_handler
from infra.functions import CURATOR, EMBEDDING_MODEL_ID
from infra.workers import CURATOR_BATCH_SIZE, CURATOR_RETRIES, MEMORY_SORT_KEY_PREFIX
from shared.config import names
from shared.config.names import Env
from tests.infra.support import Synth, synthesize

pytestmark = pytest.mark.infra

FOURTEEN_DAYS = 14 * 24 * 3600


def _mapping(synth: Synth) -> dict[str, Any]:
    """The curator's mapping (the workflow dispatcher has one on its queue too)."""
    (properties,) = [
        mapping["Properties"]
        for mapping in synth.of_type("AWS::Lambda::EventSourceMapping").values()
        if mapping["Properties"]["FunctionName"] == {"Ref": synth.functions()[CURATOR]}
    ]
    return dict(properties)


def _dead_letters(synth: Synth) -> str:
    return synth.logical_id(synth.stack.workers.dead_letter_queues[CURATOR])


def _env(synth: Synth, function: str) -> dict[str, Any]:
    variables: dict[str, Any] = synth.resources[synth.functions()[function]]["Properties"][
        "Environment"
    ]["Variables"]
    return variables


def test_the_curator_is_fed_by_the_memories_table_stream_from_the_newest_record(
    synth: Synth,
) -> None:
    mapping = _mapping(synth)
    memories = synth.logical_id(synth.stack.data.table(names.TABLE_MEMORIES))
    assert mapping["FunctionName"] == {"Ref": synth.functions()[CURATOR]}
    assert mapping["EventSourceArn"] == {"Fn::GetAtt": [memories, "StreamArn"]}
    assert mapping["StartingPosition"] == "LATEST"
    assert mapping["BatchSize"] == CURATOR_BATCH_SIZE == 10


def test_the_stream_mapping_only_invokes_the_curator_for_pending_memory_writes(
    synth: Synth,
) -> None:
    pending, filed = _mapping(synth)["FilterCriteria"]["Filters"]
    assert json.loads(pending["Pattern"]) == {
        "eventName": ["INSERT", "MODIFY"],
        "dynamodb": {
            "Keys": {"sk": {"S": [{"prefix": "MEMORY#"}]}},
            "NewImage": {"status": {"S": ["pending"]}},
        },
    }
    # Filed (the status left out of the item): checked for conflicts and duplicates.
    assert json.loads(filed["Pattern"]) == {
        "eventName": ["INSERT", "MODIFY"],
        "dynamodb": {
            "Keys": {"sk": {"S": [{"prefix": "MEMORY#"}]}},
            "NewImage": {"status": [{"exists": False}]},
        },
    }
    # The filter and the handler's own check agree on what a memory record is.
    assert MEMORY_SORT_KEY_PREFIX == curator_handler.MEMORY_SORT_KEY_PREFIX


def test_a_failing_record_is_retried_alone_then_sent_to_the_dead_letter_queue(
    synth: Synth,
) -> None:
    mapping = _mapping(synth)
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert mapping["BisectBatchOnFunctionError"] is True
    assert mapping["MaximumRetryAttempts"] == CURATOR_RETRIES == 3
    assert mapping["DestinationConfig"] == {
        "OnFailure": {"Destination": {"Fn::GetAtt": [_dead_letters(synth), "Arn"]}}
    }


def test_the_curator_dead_letter_queue_is_encrypted_tls_only_and_kept_14_days(
    synth: Synth,
) -> None:
    queue_id = _dead_letters(synth)
    queue = synth.resources[queue_id]["Properties"]
    assert queue["SqsManagedSseEnabled"] is True
    assert queue["MessageRetentionPeriod"] == FOURTEEN_DAYS
    synth.template.has_resource_properties(
        "AWS::SQS::QueuePolicy",
        {
            "Queues": [{"Ref": queue_id}],
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


def test_the_curator_reaches_only_the_memories_table_the_collection_titan_and_its_dlq(
    synth: Synth,
) -> None:
    tables = {k: synth.logical_id(t) for k, t in synth.stack.data.tables.items()}
    memories = tables[names.TABLE_MEMORIES]
    assert {"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:DeleteItem"} <= synth.actions_on(
        CURATOR, memories
    )
    # The conflicts it finds are domain events, appended to the event log: a put, no read.
    coordination = tables[names.TABLE_COORDINATION]
    assert synth.actions_on(CURATOR, coordination) == {"dynamodb:PutItem"}
    for logical_id, table_id in tables.items():
        if logical_id not in (names.TABLE_MEMORIES, names.TABLE_COORDINATION):
            assert not synth.actions_on(CURATOR, table_id), logical_id
    allowed = {
        json.dumps({"Fn::GetAtt": [memories, "Arn"]}),
        json.dumps({"Fn::GetAtt": [memories, "StreamArn"]}),
        json.dumps({"Fn::GetAtt": [coordination, "Arn"]}),
        json.dumps(synth.stack.resolve(synth.stack.search.access_resource)),
        json.dumps({"Fn::GetAtt": [_dead_letters(synth), "Arn"]}),
    }
    log_group = synth.resources[synth.functions()[CURATOR]]["Properties"]["LoggingConfig"]
    allowed.add(json.dumps({"Fn::GetAtt": [log_group["LogGroup"]["Ref"], "Arn"]}))
    for statement in synth.statements_of(CURATOR):
        resource = statement["Resource"]
        actions = set(statement["Action"] if isinstance(statement["Action"], list) else [])
        if resource == "*":
            # Actions IAM knows only with Resource "*" (suppressed with these reasons).
            assert actions <= {
                "xray:PutTraceSegments",
                "xray:PutTelemetryRecords",
                "dynamodb:ListStreams",
            }, statement
        elif statement["Action"] == "bedrock:InvokeModel":
            assert f"::foundation-model/{EMBEDDING_MODEL_ID}" in json.dumps(resource)
            assert "*" not in json.dumps(resource)
        else:
            assert json.dumps(resource) in allowed, statement
    assert synth.actions_on(CURATOR, _dead_letters(synth)) >= {"sqs:SendMessage"}


def test_the_curator_gets_the_memories_table_and_search_settings_of_the_memory_function(
    synth: Synth,
) -> None:
    curator, memory = _env(synth, CURATOR), _env(synth, names.GROUP_MEMORY)
    for key in (
        Env.MEMORIES_TABLE,
        Env.SEARCH_ENDPOINT,
        Env.SEARCH_SERVICE,
        Env.EMBEDDING_MODEL_ID,
        Env.EMBEDDING_DIMENSIONS,
    ):
        assert curator[key] == memory[key], key
    assert Env.TOKENS_TABLE not in curator
    assert curator[Env.POWERTOOLS_SERVICE_NAME] == "cairn-curator"


def test_every_function_leaves_curation_to_the_stream(synth: Synth) -> None:
    """Sessions, sync and the sync runner write memories too: none curates inline (which
    would start a detection thread Lambda freezes between invocations)."""
    for function in synth.functions():
        assert _env(synth, function)[Env.CURATION] == "stream", function


def test_records_in_the_curator_dead_letter_queue_raise_an_alarm_on_the_topic(
    synth: Synth,
) -> None:
    topic = synth.logical_id(synth.stack.observability.topic)
    queue_name = {"Fn::GetAtt": [_dead_letters(synth), "QueueName"]}
    synth.template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "Namespace": "AWS/SQS",
            "MetricName": "ApproximateNumberOfMessagesVisible",
            "Dimensions": [{"Name": "QueueName", "Value": queue_name}],
            "ComparisonOperator": "GreaterThanOrEqualToThreshold",
            "Threshold": 1,
            "AlarmActions": [{"Ref": topic}],
            "OKActions": [{"Ref": topic}],
        },
    )


def test_the_dashboard_shows_the_curator_lag_and_its_dead_letters(synth: Synth) -> None:
    (dashboard,) = synth.of_type("AWS::CloudWatch::Dashboard").values()
    body = json.dumps(dashboard["Properties"]["DashboardBody"])
    assert "IteratorAge" in body
    assert "ApproximateNumberOfMessagesVisible" in body


CURATOR_MODEL = "anthropic.claude-3-haiku-20240307-v1:0"


@pytest.fixture(scope="module")
def with_model(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    return synthesize(
        tmp_path_factory.mktemp("cdk-model"),
        env="dev",
        developer="tester",
        curator_model=CURATOR_MODEL,
    )


def test_a_configured_curator_model_reaches_the_curator_only(with_model: Synth, dev: Synth) -> None:
    assert _env(with_model, CURATOR)[Env.CURATOR_MODEL_ID] == CURATOR_MODEL
    assert Env.CURATOR_MODEL_ID not in _env(dev, CURATOR)
    model_grants = [
        statement
        for statement in with_model.statements_of(CURATOR)
        if statement["Action"] == "bedrock:InvokeModel"
        and f"::foundation-model/{CURATOR_MODEL}" in json.dumps(statement["Resource"])
    ]
    assert len(model_grants) == 1
    for group in names.TOOL_GROUPS:
        assert Env.CURATOR_MODEL_ID not in _env(with_model, group)
