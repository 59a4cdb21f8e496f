"""Builds the orchestrator group's service from each part's own wiring (the one place the
parts are put together; each part's wiring chooses its adapters).

What other groups do when a task finishes or an event is published is passed in: the
composition root (`shared.app.reactions`) connects those reactions.
"""

from __future__ import annotations

from collections.abc import Sequence

from shared.orchestrator.agents.wiring import build_agent_service
from shared.orchestrator.artifacts.wiring import build_artifact_service
from shared.orchestrator.costs.wiring import build_cost_service
from shared.orchestrator.events.service import PublishListener
from shared.orchestrator.events.wiring import build_event_service
from shared.orchestrator.service import Orchestrator
from shared.orchestrator.tasks.service import FinishListener
from shared.orchestrator.tasks.wiring import build_task_service


def build_orchestrator(
    *,
    on_task_finished: Sequence[FinishListener] = (),
    on_event_published: Sequence[PublishListener] = (),
) -> Orchestrator:
    """The orchestrator's services (the task service asks the agent service for
    capabilities), with the reactions to a finished task and a published event."""
    agents = build_agent_service()
    tasks = build_task_service(agents)
    for task_reaction in on_task_finished:
        tasks.on_finish(task_reaction)
    events = build_event_service()
    for event_reaction in on_event_published:
        events.on_publish(event_reaction)
    return Orchestrator(
        agents=agents,
        tasks=tasks,
        events=events,
        costs=build_cost_service(),
        artifacts=build_artifact_service(),
    )
