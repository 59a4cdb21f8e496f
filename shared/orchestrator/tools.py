"""The orchestrator tool group (seed 000): agent.* and task.* over the coordination table.

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
    from shared.orchestrator.tasks.service import TaskService


@dataclass(frozen=True)
class Orchestrator:
    agents: AgentService
    tasks: TaskService


@runtime.cached
def build_service() -> Orchestrator:
    from shared.orchestrator.agents.service import build_agent_service
    from shared.orchestrator.tasks.service import build_task_service

    agents = build_agent_service()
    return Orchestrator(agents=agents, tasks=build_task_service(agents))


GROUP: ToolGroup[Orchestrator] = ToolGroup(
    name=names.GROUP_ORCHESTRATOR, build_service=build_service
)


def _register() -> None:
    from shared.orchestrator.agents.tools import register as register_agents
    from shared.orchestrator.tasks.tools import register as register_tasks

    register_agents(GROUP)
    register_tasks(GROUP)


_register()
