"""Every tool group cairn serves, and the catalog built from them."""

from __future__ import annotations

from typing import Any

from shared.tools.registry import Catalog, ToolGroup


def load_groups() -> dict[str, ToolGroup[Any]]:
    """Import each group's tool module (cheap: services are built on first call only)."""
    from shared.handoffs.tools import GROUP as handoffs
    from shared.knowledge.tools import GROUP as knowledge
    from shared.memory.tools import GROUP as memory
    from shared.orchestrator.tools import GROUP as orchestrator
    from shared.search.tools import GROUP as search
    from shared.sessions.tools import GROUP as sessions
    from shared.sync.tools import GROUP as sync
    from shared.workflows.tools import GROUP as workflows

    return {
        group.name: group
        for group in (memory, search, handoffs, sync, orchestrator, sessions, workflows, knowledge)
    }


def load_catalog() -> Catalog:
    return Catalog(spec for group in load_groups().values() for spec in group.tools.values())
