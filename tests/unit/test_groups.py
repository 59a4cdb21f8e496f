"""Adding a tool group is a few lines in one place: its name, its tools, its handler.

The infra side (each group's entry in `infra.functions.GROUP_ACCESS`) is checked in
tests/infra/test_functions.py, which may import the CDK.
"""

from __future__ import annotations

from pathlib import Path

from shared.app.groups import load_groups
from shared.config import names

ROOT = Path(__file__).resolve().parents[2]
GATEWAY = "gateway"  # the one function that is not a tool group


def test_the_loaded_groups_are_exactly_the_named_tool_groups() -> None:
    groups = load_groups()
    assert sorted(groups) == sorted(names.TOOL_GROUPS)
    for name, group in groups.items():
        assert group.name == name
        assert group.tools, f"group {name} serves no tools"


def test_every_tool_group_has_a_lambda_handler() -> None:
    for group in names.TOOL_GROUPS:
        assert (ROOT / "functions" / group / "handler.py").is_file(), group


def test_every_lambda_handler_is_a_tool_group_a_worker_or_the_gateway() -> None:
    handlers = {path.parent.name for path in (ROOT / "functions").glob("*/handler.py")}
    assert handlers == {GATEWAY, *names.TOOL_GROUPS, *names.WORKERS}
