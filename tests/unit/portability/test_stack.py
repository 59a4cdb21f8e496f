"""`--stack`: the commands run here on a deployed stack's tables, named by its outputs (moto
stands in for the stack; a stand-in CloudFormation answers its outputs)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

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
    with fake_aws():
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
