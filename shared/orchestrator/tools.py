"""The orchestrator tool group (seed 000): agent.*, task.*, artifact.*, event.* and cost.*
over the coordination table (and the artifacts/ prefix of the bucket).

Agents (`shared.orchestrator.agents`) and tasks (`shared.orchestrator.tasks`) each register their
tools on this group; the group function builds both services once per container.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from shared import runtime
from shared.config import names
from shared.tools.registry import ToolGroup

if TYPE_CHECKING:
    from shared.orchestrator.agents.service import AgentService
    from shared.orchestrator.artifacts.service import ArtifactService
    from shared.orchestrator.costs.service import CostService
    from shared.orchestrator.events.service import EventService
    from shared.orchestrator.tasks.service import TaskService


@dataclass(frozen=True)
class Orchestrator:
    agents: AgentService
    tasks: TaskService
    events: EventService
    costs: CostService
    artifacts: ArtifactService


@runtime.cached
def build_service() -> Orchestrator:
    from shared.orchestrator.agents.service import build_agent_service
    from shared.orchestrator.artifacts.service import build_artifact_service
    from shared.orchestrator.costs.wiring import build_cost_service
    from shared.orchestrator.events.wiring import build_event_service
    from shared.orchestrator.tasks.wiring import build_task_service

    agents = build_agent_service()
    return Orchestrator(
        agents=agents,
        tasks=build_task_service(agents),
        events=build_event_service(),
        costs=build_cost_service(),
        artifacts=build_artifact_service(),
    )


GROUP: ToolGroup[Orchestrator] = ToolGroup(
    name=names.GROUP_ORCHESTRATOR, build_service=build_service
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
