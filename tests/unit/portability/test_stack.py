"""`--stack`: the commands run here on a deployed stack's tables, named by its outputs (moto
stands in for the stack; a stand-in CloudFormation answers its outputs)."""

from __future__ import annotations

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
