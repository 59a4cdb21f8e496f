"""`--stack`: the commands run here on a deployed stack's tables, named by its outputs (moto
stands in for the stack; a stand-in CloudFormation answers its outputs)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from shared import runtime
from shared.cli.portability import CommandFailed, on_stack
from shared.config import names
from shared.config.settings import Settings
from shared.config.tables import ALL_TABLES, physical_name
from shared.handoffs.ports import OpenHandoffFilter
from shared.handoffs.wiring import build_handoff_store
from shared.knowledge.wiring import ENV_WEBHOOK_SECRET_ARN
from shared.portability.format import end_line, header, line
from shared.storage.team_data_dynamo import DynamoTeamData
from shared.workflows.adapters.scheduler import EventBridgeSchedules
from tests.fake_aws import fake_aws
from tests.unit.storage.test_handoff_store_contract import handoff

BUCKET = "cairn-test-artifacts"


class StackOutputs:
    """What `describe_stacks` answers for a cairn stack whose tables are moto's."""

    def __init__(self, outputs: dict[str, str]) -> None:
        self.outputs = outputs

    def describe_stacks(self, StackName: str) -> dict[str, Any]:  # boto3's argument name
        return {
            "Stacks": [
                {"Outputs": [{"OutputKey": k, "OutputValue": v} for k, v in self.outputs.items()]}
            ]
        }


@pytest.fixture
def stack() -> Iterator[StackOutputs]:
    by_logical = {spec.logical_id: physical_name(spec) for spec in ALL_TABLES}
    outputs = {key: by_logical[logical] for logical, key in names.TABLE_OUTPUTS.items()}
    outputs[names.Outputs.ARTIFACTS_BUCKET] = BUCKET
    with fake_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket=BUCKET)
        s3.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})
        yield StackOutputs(outputs)
    runtime.configure(Settings())


def open_handoffs(team: str) -> list[str]:
    return [h.id for h in build_handoff_store().list_open(team, OpenHandoffFilter(), limit=9).items]


@pytest.mark.moto
def test_export_delete_import_on_a_stack(stack: StackOutputs, tmp_path: Path) -> None:
    portability = on_stack("cairn-test", stack, with_index=False)
    assert runtime.settings().storage == "dynamodb"
    build_handoff_store().create("acme", handoff(1))
    build_handoff_store().create("other", handoff(2))
    path = tmp_path / "acme.jsonl"
    path.write_text("".join(portability.export("acme")))

    assert portability.delete_team("acme") == {names.TABLE_HANDOFFS: 1}
    assert open_handoffs("acme") == []
    assert portability.import_file(path).written == 1
    assert open_handoffs("acme") == ["hof_0001"]
    assert open_handoffs("other") == ["hof_0002"]


@pytest.mark.moto
def test_a_stack_without_its_table_outputs_is_named(stack: StackOutputs) -> None:
    stack.outputs.pop(names.Outputs.SESSIONS_TABLE)
    with pytest.raises(CommandFailed, match=names.Outputs.SESSIONS_TABLE):
        on_stack("cairn-test", stack, with_index=False)


@pytest.mark.moto
def test_team_delete_erases_every_version_of_the_teams_files_in_the_bucket(
    stack: StackOutputs,
) -> None:
    s3 = boto3.client("s3", region_name="us-east-1")
    for key in ("artifacts/acme/art_1", "artifacts/acme/art_1", "inbox/acme/n.md"):
        s3.put_object(Bucket=BUCKET, Key=key, Body=b"acme's")
    for key in ("artifacts/acme2/art_2", "inbox/other/n.md"):
        s3.put_object(Bucket=BUCKET, Key=key, Body=b"not acme's")
    portability = on_stack("cairn-test", stack, with_index=False)

    counts = portability.delete_team("acme")

    assert counts == {"artifact_files": 1, "inbox_files": 1}
    left = s3.list_object_versions(Bucket=BUCKET)
    assert sorted(v["Key"] for v in left.get("Versions", [])) == [
        "artifacts/acme2/art_2",
        "inbox/other/n.md",
    ]
    assert left.get("DeleteMarkers", []) == []


WORKFLOW_GROUP = "cairn-test-workflows"
RUNNER = "arn:aws:lambda:us-east-1:123456789012:function:workflows"
ROLE = "arn:aws:iam::123456789012:role/scheduler"


def workflow_schedule(team: str, workflow_id: str) -> None:
    """A schedule-triggered workflow's schedule, as `EventBridgeSchedules.put` names it."""
    boto3.client("scheduler", region_name="us-east-1").create_schedule(
        Name=EventBridgeSchedules.schedule_name(team, workflow_id),
        GroupName=WORKFLOW_GROUP,
        ScheduleExpression="rate(1 hour)",
        FlexibleTimeWindow={"Mode": "OFF"},
        Target={
            "Arn": RUNNER,
            "RoleArn": ROLE,
            "Input": json.dumps({"workflow_schedule": {"team": team, "workflow_id": workflow_id}}),
        },
    )


@pytest.mark.moto
def test_team_delete_erases_its_workflow_schedules_and_webhook_secret(
    stack: StackOutputs, monkeypatch: pytest.MonkeyPatch
) -> None:
    scheduler = boto3.client("scheduler", region_name="us-east-1")
    scheduler.create_schedule_group(Name=WORKFLOW_GROUP)
    for team, workflow_id in (("acme", "wf_1"), ("acme", "wf_2"), ("other", "wf_3")):
        workflow_schedule(team, workflow_id)
    secrets = boto3.client("secretsmanager", region_name="us-east-1")
    document = {
        "acme": "acme's secret",
        "other": "other's secret",
        "pull": {"acme": {"token": "t", "repos": ["a/b"]}, "other": {"token": "u", "repos": []}},
    }
    arn = secrets.create_secret(Name="webhooks", SecretString=json.dumps(document))["ARN"]
    stack.outputs[names.Outputs.WORKFLOW_SCHEDULE_GROUP] = WORKFLOW_GROUP
    stack.outputs[names.Outputs.WEBHOOK_SECRETS] = arn
    monkeypatch.setenv(ENV_WEBHOOK_SECRET_ARN, "")  # on_stack sets it from the output
    portability = on_stack("cairn-test", stack, with_index=False)

    counts = portability.delete_team("acme")

    assert counts == {"webhook_secrets": 1, "workflow_schedules": 2}
    left = scheduler.list_schedules(GroupName=WORKFLOW_GROUP)["Schedules"]
    assert [s["Name"] for s in left] == [EventBridgeSchedules.schedule_name("other", "wf_3")]
    kept = json.loads(secrets.get_secret_value(SecretId=arn)["SecretString"])
    assert kept == {"other": "other's secret", "pull": {"other": {"token": "u", "repos": []}}}
    assert portability.delete_team("acme") == {}  # nothing left of it


@pytest.mark.moto
def test_a_stack_export_carries_artifact_bytes_from_the_bucket_and_import_puts_them_back(
    stack: StackOutputs, tmp_path: Path
) -> None:
    s3 = boto3.client("s3", region_name="us-east-1")
    s3.put_object(Bucket=BUCKET, Key="artifacts/acme/art_1", Body=b"\x00\x01acme's bytes")
    s3.put_object(Bucket=BUCKET, Key="artifacts/acme2/art_2", Body=b"not acme's")
    portability = on_stack("cairn-test", stack, with_index=False)
    path = tmp_path / "acme.jsonl"
    path.write_text("".join(portability.export("acme")))
    records = [json.loads(text) for text in path.read_text().splitlines()]
    assert {"kind": "artifact_bytes", "artifact_id": "art_1", "base64": "AAFhY21lJ3MgYnl0ZXM="} in (
        records
    )

    portability.delete_team("acme")
    assert portability.import_file(path).written == 1
    body = s3.get_object(Bucket=BUCKET, Key="artifacts/acme/art_1")["Body"].read()
    assert body == b"\x00\x01acme's bytes"
    assert portability.import_file(path).written == 0


@pytest.mark.moto
def test_a_format_1_file_of_dynamodb_items_still_imports_into_a_stack(
    stack: StackOutputs, tmp_path: Path
) -> None:
    portability = on_stack("cairn-test", stack, with_index=False)
    build_handoff_store().create("acme", handoff(1))
    tables = {
        spec.logical_id: boto3.resource("dynamodb").Table(physical_name(spec))
        for spec in ALL_TABLES
    }
    items = list(DynamoTeamData(tables).export_team("acme"))  # what format 1 wrote
    path = tmp_path / "v1.jsonl"
    path.write_text(
        "".join(
            [line({**header("acme", "dynamodb"), "format_version": 1})]
            + [line(record) for record in items]
            + [end_line(len(items))]
        )
    )
    portability.delete_team("acme")

    assert portability.import_file(path).written == 1
    assert open_handoffs("acme") == ["hof_0001"]


@pytest.mark.moto
def test_an_import_into_a_stack_recreates_its_workflow_schedules(
    stack: StackOutputs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from shared.workflows.wiring import FUNCTION_ARN_ENV, build_workflow_store
    from tests.unit.storage.test_workflow_store_contract import workflow

    scheduler = boto3.client("scheduler", region_name="us-east-1")
    scheduler.create_schedule_group(Name=WORKFLOW_GROUP)
    stack.outputs[names.Outputs.WORKFLOW_SCHEDULE_GROUP] = WORKFLOW_GROUP
    stack.outputs[names.Outputs.WORKFLOWS_FUNCTION_ARN] = RUNNER
    stack.outputs[names.Outputs.WORKFLOW_SCHEDULER_ROLE_ARN] = ROLE
    monkeypatch.setenv(FUNCTION_ARN_ENV, "")  # on_stack sets it from the output
    portability = on_stack("cairn-test", stack, with_index=False)
    nightly = workflow(1).model_copy(
        update={"trigger_type": "schedule", "trigger_config": {"expression": "rate(1 day)"}}
    )
    build_workflow_store().create("acme", nightly)
    build_workflow_store().create("acme", workflow(2))  # manual: no schedule
    path = tmp_path / "acme.jsonl"
    path.write_text("".join(portability.export("acme")))
    portability.delete_team("acme")
    assert scheduler.list_schedules(GroupName=WORKFLOW_GROUP)["Schedules"] == []

    report = portability.import_file(path)

    assert report.restored == {"workflow_schedules": 1}
    name = EventBridgeSchedules.schedule_name("acme", nightly.id)
    made = scheduler.get_schedule(Name=name, GroupName=WORKFLOW_GROUP)
    assert made["ScheduleExpression"] == "rate(1 day)"
    assert made["Target"]["Arn"] == RUNNER
    assert made["Target"]["RoleArn"] == ROLE
    assert json.loads(made["Target"]["Input"]) == {
        "workflow_schedule": {"team": "acme", "workflow_id": nightly.id}
    }
