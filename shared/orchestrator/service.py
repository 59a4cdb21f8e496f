"""The orchestrator group's service: the five services its tools call, built together once."""

from __future__ import annotations

from dataclasses import dataclass

from shared.orchestrator.agents.service import AgentService
from shared.orchestrator.artifacts.service import ArtifactService
from shared.orchestrator.costs.service import CostService
from shared.orchestrator.events.service import EventService
from shared.orchestrator.tasks.service import TaskService


@dataclass(frozen=True)
class Orchestrator:
    """Agents, tasks, events, costs and artifacts of the coordination table (and bucket)."""

    agents: AgentService
    tasks: TaskService
    events: EventService
    costs: CostService
    artifacts: ArtifactService
