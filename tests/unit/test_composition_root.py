"""The composition root (`shared.app`) is the one place that knows every tool group.

- Every module that registers tools (`@GROUP.tool`) is named in `shared.app.groups.GROUPS`:
  a tool module nobody lists would register nothing, and no other test would notice.
- Every group a Lambda function serves comes assembled from that list, its service bound.
- Neither the tool kit (`shared.tools`) nor the protocol layer imports a group or the root.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from shared.app.groups import GROUPS, load_group, load_groups, tool_specs
from shared.config import names
from shared.tools.registry import ToolGroup

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT / "shared"
GROUP_PACKAGES = {f"shared.{name}" for name in names.TOOL_GROUPS}


def _module(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def _registers_tools(path: Path) -> bool:
    """Does a function of `path` carry a `@<group>.tool(...)` decorator?"""
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.FunctionDef):
            for decorator in node.decorator_list:
                if (
                    isinstance(decorator, ast.Call)
                    and isinstance(decorator.func, ast.Attribute)
                    and decorator.func.attr == "tool"
                ):
                    return True
    return False


def _listed_modules() -> set[str]:
    return {module for plan in GROUPS.values() for module in (*plan.tools, *plan.deferred)}


def test_every_module_that_registers_tools_is_listed_at_the_root() -> None:
    registering = {_module(path) for path in SHARED.rglob("*.py") if _registers_tools(path)}
    assert registering, "the scan found no tool module: has the layout moved?"
    assert registering == _listed_modules(), (
        "list each tool module in shared/app/groups.py (GROUPS), and only those: "
        f"unlisted {sorted(registering - _listed_modules())}, "
        f"listed without tools {sorted(_listed_modules() - registering)}"
    )


def test_the_root_lists_exactly_the_named_tool_groups() -> None:
    assert set(GROUPS) == set(names.TOOL_GROUPS)
    for name, plan in GROUPS.items():
        assert plan.group == f"shared.{name}.group", name


def test_each_listed_module_registers_tools_on_its_own_group() -> None:
    for name, group in load_groups().items():
        owners = {spec.implementation.__module__ for spec in group.tools.values()}
        plan = GROUPS[name]
        assert owners == {*plan.tools, *plan.deferred}, name


@pytest.mark.parametrize("name", list(names.TOOL_GROUPS))
def test_a_loaded_group_builds_its_service(name: str) -> None:
    group = load_group(name)
    assert group.build_service != group._unbound, f"{name} has no service factory"


def test_a_group_not_assembled_by_the_root_says_how_to_get_a_service() -> None:
    bare: ToolGroup[object] = ToolGroup(name="bare")
    with pytest.raises(RuntimeError, match=r"shared\.app\.groups\.load_group"):
        bare.build_service()


def test_tool_names_are_unique_across_groups() -> None:
    specs = tool_specs()
    assert len(specs) == sum(len(group.tools) for group in load_groups().values())


@pytest.mark.parametrize("layer", ["shared/tools", "shared/protocol"])
def test_the_tool_kit_and_the_protocol_import_no_group_and_not_the_root(layer: str) -> None:
    offending = []
    for path in (ROOT / layer).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.ImportFrom) and node.module:
                targets = [node.module]
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                continue
            for target in targets:
                package = ".".join(target.split(".")[:2])
                if package in GROUP_PACKAGES or package in ("shared.app", "shared.cli"):
                    offending.append(f"{_module(path)} imports {target}")
    assert offending == []
