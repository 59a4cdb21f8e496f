"""The orchestrator tool group (seed 000): agent.*, task.*, artifact.*, event.* and cost.*
over the coordination table (and the artifacts/ prefix of the bucket).

Agents (`shared.orchestrator.agents`) and tasks (`shared.orchestrator.tasks`) each register their
tools on this group; `shared.orchestrator.wiring` builds their services once per container.
"""

from __future__ import annotations

from shared.config import names
from shared.orchestrator.service import Orchestrator
from shared.orchestrator.wiring import build_orchestrator
from shared.tools.registry import ToolGroup

GROUP: ToolGroup[Orchestrator] = ToolGroup(
    name=names.GROUP_ORCHESTRATOR, build_service=build_orchestrator
)


def _register() -> None:
    from shared.orchestrator.agents.tools import register as register_agents
    from shared.orchestrator.artifacts.tools import register as register_artifacts
    from shared.orchestrator.costs.tools import register as register_costs
    from shared.orchestrator.events.tools import register as register_events
    from shared.orchestrator.tasks.tools import register as register_tasks

    register_agents(GROUP)
    register_tasks(GROUP)
    register_events(GROUP)
    register_costs(GROUP)
    register_artifacts(GROUP)


_register()
