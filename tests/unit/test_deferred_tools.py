"""What a group function's Lambda init leaves for later.

Deferred tool modules: a group function imports a module of rarely called tools at the first
call of one of them (`ToolGroup.defer`), and everything else reads the group whole. Also the
collaborators a group builds at first use: the memory group's curation (inline only) and the
orchestrator's workflow engine.
"""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from shared.tools.registry import ToolGroup
from tests.unit.lambda_init import lambda_init_environment, run_json

# A group module, and a module of tools that registers them on its GROUP when imported (the
# fixture writes one group module and three tool modules under a name unique to the test).
GROUP_MODULE = """
from shared.tools.registry import ToolGroup
GROUP = ToolGroup(name="quiz", build_service=lambda: "service")
"""
TOOLS_MODULE = """
from pydantic import BaseModel
from shared.tools.registry import READ_ONLY, ToolContext
from {group_module} import GROUP

class Question(BaseModel):
    text: str

{tools}
"""
TOOL = """
@GROUP.tool(name={name!r}, title="t", description="d", scopes=(), annotations=READ_ONLY)
def {name}(ctx: ToolContext[str], args: Question) -> Question:
    return args
"""


@pytest.fixture
def modules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ToolGroup[str]]:
    """A fresh group module plus three tool modules: `early` (ask), `later` (hint, solve) and
    `wrong` (registers `other`)."""
    group_module = f"deferred_group_{tmp_path.name}"
    (tmp_path / f"{group_module}.py").write_text(GROUP_MODULE)
    for name, tools in {"early": ["ask"], "later": ["hint", "solve"], "wrong": ["other"]}.items():
        source = TOOLS_MODULE.format(
            group_module=group_module, tools="".join(TOOL.format(name=t) for t in tools)
        )
        (tmp_path / f"{group_module}_{name}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    group_module_object = __import__(group_module)
    __import__(f"{group_module}_early")
    yield group_module_object.GROUP
    for name in list(sys.modules):
        if name.startswith(group_module):
            del sys.modules[name]


def _module(group: ToolGroup[str], name: str) -> str:
    """The fixture's tool module `name` (named after the module its group was defined in)."""
    return f"{group.build_service.__module__}_{name}"


def test_a_deferred_module_is_imported_at_its_first_tools_lookup_only(
    modules: ToolGroup[str],
) -> None:
    later = _module(modules, "later")
    modules.defer(later, ("hint", "solve"))

    assert modules.spec("ask") is not None
    assert later not in sys.modules  # looking up another tool imports nothing
    assert modules.spec("nope") is None

    hint = modules.spec("hint")
    assert later in sys.modules
    assert hint is not None
    assert hint.name == "hint"
    assert issubclass(hint.input_model, BaseModel)
    assert list(modules.tools) == ["ask", "hint", "solve"]


def test_reading_every_tool_imports_every_deferred_module_in_order(
    modules: ToolGroup[str],
) -> None:
    modules.defer(_module(modules, "later"), ("hint", "solve"))
    assert list(modules.tools) == ["ask", "hint", "solve"]


def test_a_declaration_that_does_not_match_the_module_is_refused_naming_both(
    modules: ToolGroup[str],
) -> None:
    modules.defer(_module(modules, "wrong"), ("hint",))
    with pytest.raises(RuntimeError, match=r"registered \['other'\].*declared \['hint'\]"):
        modules.spec("hint")


def test_a_deferred_name_already_taken_is_refused(modules: ToolGroup[str]) -> None:
    with pytest.raises(ValueError, match="'ask' is registered twice"):
        modules.defer(_module(modules, "later"), ("ask",))
    modules.defer(_module(modules, "later"), ("hint", "solve"))
    with pytest.raises(ValueError, match="'hint' is registered twice"):
        modules.defer(_module(modules, "wrong"), ("hint",))


def _after_lambda_init(program: str, function: str, catalog: Path) -> Any:
    """The JSON `program` prints last, run as `function`'s Lambda init would run it (with the
    tool catalog its bundle carries)."""
    return run_json(program, lambda_init_environment(function, catalog))


# The memory function's init, as Lambda runs it, then a lookup of an advanced memory tool.
MEMORY_PROBE = textwrap.dedent(
    """
    import json, sys
    import functions.memory.handler
    from shared.memory.tools import GROUP
    lifecycle = ("shared.memory.lifecycle_tools", "shared.memory.lifecycle",
                 "shared.memory.lifecycle_models")
    at_init = [m for m in lifecycle if m in sys.modules]
    curation = [m for m in ("shared.memory.curator", "shared.memory.detection") if m in sys.modules]
    spec = GROUP.spec("memory_query")
    after_lookup = [m for m in lifecycle if m in sys.modules]
    service = GROUP.build_service()
    built = type(service.lifecycle).__name__
    print(json.dumps({
        "at_init": at_init,
        "curation": curation,
        "after_lookup": after_lookup,
        "input": spec.input_model.__name__,
        "built": built,
        "after_build": [m for m in lifecycle if m in sys.modules],
    }))
    """
)


def test_the_memory_functions_init_leaves_the_advanced_memory_tools_for_their_first_call(
    lambda_catalog: Path,
) -> None:
    found = _after_lambda_init(MEMORY_PROBE, "memory", lambda_catalog)
    assert found["at_init"] == []
    # Curation runs in the curator function (fed by the table's stream), never in this one
    assert found["curation"] == []
    # The lookup registers the tools (their models); the service's part is built at the call
    assert found["after_lookup"] == [
        "shared.memory.lifecycle_tools",
        "shared.memory.lifecycle_models",
    ]
    assert found["input"] == "MemoryQueryInput"
    assert found["built"] == "Lifecycle"
    assert "shared.memory.lifecycle" in found["after_build"]


# The orchestrator function's init, as Lambda runs it: which workflows modules it loaded.
ORCHESTRATOR_PROBE = textwrap.dedent(
    """
    import json, sys
    import functions.orchestrator.handler
    print(json.dumps(sorted(m for m in sys.modules if m.startswith("shared.workflows"))))
    """
)


def test_the_orchestrator_functions_init_leaves_the_workflow_engine_for_the_first_publish(
    lambda_catalog: Path,
) -> None:
    # A finished workflow step and a published event reach the workflow service; the first
    # such call builds it (shared.orchestrator.wiring), so init does not load its modules.
    loaded = _after_lambda_init(ORCHESTRATOR_PROBE, "orchestrator", lambda_catalog)
    assert "shared.workflows.service" not in loaded
    assert "shared.workflows.wiring" not in loaded
