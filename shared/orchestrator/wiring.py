"""Builds the orchestrator group's service from each part's own wiring (the one place the
parts are put together; each part's wiring chooses its adapters)."""

from __future__ import annotations

from shared import runtime
from shared.orchestrator.agents.wiring import build_agent_service
from shared.orchestrator.artifacts.wiring import build_artifact_service
from shared.orchestrator.costs.wiring import build_cost_service
from shared.orchestrator.events.models import Event
from shared.orchestrator.events.wiring import build_event_service
from shared.orchestrator.service import Orchestrator
from shared.orchestrator.tasks.models import Task
from shared.orchestrator.tasks.wiring import build_task_service


@runtime.cached
def build_orchestrator() -> Orchestrator:
    """The orchestrator's services, built once per process (the task service asks the agent
    service for capabilities)."""
    agents = build_agent_service()
    tasks = build_task_service(agents)
    tasks.on_finish(_resume_workflow_step)
    tasks.on_finish(_record_knowledge_event)
    events = build_event_service()
    events.on_publish(_start_event_workflows)
    return Orchestrator(
        agents=agents,
        tasks=tasks,
        events=events,
        costs=build_cost_service(),
        artifacts=build_artifact_service(),
    )


def _resume_workflow_step(team: str, task: Task) -> None:
    """A finished task that runs a workflow step moves its execution on (built on first use)."""
    if task.workflow_step_id:
        from shared.workflows.wiring import build_workflow_service

        build_workflow_service().task_finished(team, task)


def _record_knowledge_event(team: str, task: Task) -> None:
    """A finished task becomes a `workflow` event of the team's knowledge (seed 003)."""
    from shared.knowledge.wiring import record_workflow_event

    outcome = task.output_summary or task.error_message or ""
    record_workflow_event(
        team,
        event_id=f"task-{task.id}-{task.status}-{task.fence}",
        timestamp_ms=int((task.finished_at or task.updated_at).timestamp() * 1000),
        summary=f"Task '{task.name}' {task.status}" + (f": {outcome}" if outcome else ""),
        status=task.status,
        workflow_id=task.workflow_id or task.id,
        kind="workflow_step" if task.workflow_step_id else "task",
    )


def _start_event_workflows(team: str, event: Event) -> None:
    """A published event starts the team's workflows whose event trigger names its type
    (the workflows group's modules load at the first publish, as the knowledge ones above)."""
    from shared.workflows.wiring import build_workflow_service

    build_workflow_service().event_published(
        team, event.event_type, event.payload, event.published_by
    )
