"""Every tool group cairn serves: where its group object lives, which modules register its
tools, which of those load only at their first call, and what builds its service.

This is the one list of them. A module whose functions register tools (`@GROUP.tool`) and
that is not named here registers nothing: tests/unit/test_composition_root.py fails on it.
Modules are named, not imported, so that each Lambda function loads only its own group
(`load_group`), and the gateway none.

>>> load_group("memory").spec("memory_get")  # doctest: +SKIP
ToolSpec(name='memory_get', ...)
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from shared.config import names
from shared.tools.catalog import ToolCatalog
from shared.tools.registry import ToolGroup, ToolSpec


@dataclass(frozen=True)
class GroupPlan:
    """How one tool group is put together."""

    # The module that defines the group object, `GROUP`.
    group: str
    # Modules whose import registers the group's tools, in `tools/list` order.
    tools: tuple[str, ...]
    # Modules imported at the first call of one of their tools (name → the tools it
    # registers): rarely called tools whose models would lengthen every cold start.
    deferred: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # "module:function" building the group's service, where the root composes it with other
    # groups' (None: the group object's own factory, from its wiring).
    service: str | None = None


GROUPS: Final[Mapping[str, GroupPlan]] = {
    names.GROUP_MEMORY: GroupPlan(
        group="shared.memory.group",
        tools=("shared.memory.tools", "shared.memory.engram_tools"),
        deferred={
            "shared.memory.lifecycle_tools": (
                "memory_write",
                "memory_propose",
                "memory_query",
                "memory_retract",
                "memory_supersede",
                "memory_review",
                "conflicts_list",
                "conflict_resolve",
                "duplicates_list",
                "duplicate_resolve",
            )
        },
    ),
    names.GROUP_SEARCH: GroupPlan(group="shared.search.group", tools=("shared.search.tools",)),
    names.GROUP_HANDOFFS: GroupPlan(
        group="shared.handoffs.group", tools=("shared.handoffs.tools",)
    ),
    names.GROUP_SYNC: GroupPlan(
        group="shared.sync.group",
        tools=("shared.sync.tools",),
        service="shared.app.sync_service:build_sync_service",
    ),
    names.GROUP_ORCHESTRATOR: GroupPlan(
        group="shared.orchestrator.group",
        tools=(
            "shared.orchestrator.agents.tools",
            "shared.orchestrator.artifacts.tools",
            "shared.orchestrator.costs.tools",
            "shared.orchestrator.events.tools",
            "shared.orchestrator.tasks.tools",
        ),
        service="shared.app.reactions:build_orchestrator",
    ),
    names.GROUP_SESSIONS: GroupPlan(
        group="shared.sessions.group",
        tools=("shared.sessions.tools",),
        service="shared.app.wiring:build_session_service",
    ),
    names.GROUP_WORKFLOWS: GroupPlan(
        group="shared.workflows.group",
        tools=("shared.workflows.tools",),
        service="shared.app.reactions:build_workflow_service",
    ),
    names.GROUP_KNOWLEDGE: GroupPlan(
        group="shared.knowledge.group",
        tools=("shared.knowledge.tools",),
        service="shared.app.wiring:build_knowledge_service",
    ),
}

_loaded: dict[str, ToolGroup[Any]] = {}
_loading = threading.Lock()


def load_group(name: str) -> ToolGroup[Any]:
    """Group `name` with its tools registered, its deferred modules declared and its service
    factory bound (once per process; cheap: services are built at their first call)."""
    with _loading:
        group = _loaded.get(name)
        if group is None:
            group = _loaded[name] = _assemble(GROUPS[name])
        return group


def _assemble(plan: GroupPlan) -> ToolGroup[Any]:
    group: ToolGroup[Any] = importlib.import_module(plan.group).GROUP
    for module in plan.tools:
        importlib.import_module(module)
    for module, tools in plan.deferred.items():
        group.defer(module, tools)
    if plan.service is not None:
        module, _, function = plan.service.partition(":")
        group.build_service = getattr(importlib.import_module(module), function)
    return group


def load_groups() -> dict[str, ToolGroup[Any]]:
    """Every group, in `tools/list` order."""
    return {name: load_group(name) for name in GROUPS}


def tool_specs() -> dict[str, ToolSpec]:
    """Every tool of every group by name, in `tools/list` order (deferred modules imported)."""
    specs: dict[str, ToolSpec] = {}
    for group in load_groups().values():
        for name, spec in group.tools.items():
            if name in specs:
                raise ValueError(f"tool {name!r} is defined by two groups")
            specs[name] = spec
    return specs


def load_catalog() -> ToolCatalog:
    """The catalog the gateway serves, as every group's models make it."""
    return ToolCatalog(tool_specs().values())


def deferred_modules() -> list[str]:
    """The deferred modules of the groups loaded so far (a bundle must carry them)."""
    return [module for group in _loaded.values() for module in group.deferred_modules()]
