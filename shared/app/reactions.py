"""The orchestrator and workflows services and the reactions between groups, built once per
process:

- A finished task that runs a workflow step moves its execution on (workflows).
- A finished task, and an ended workflow execution, become `workflow` events of the team's
  knowledge (seed 003).
- A published event starts the team's workflows whose event trigger names its type.

The other groups' modules load at the first reaction that needs them, so the orchestrator
function's cold start does not pay for the workflow engine or the knowledge store.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shared import runtime
from shared.app import wiring

if TYPE_CHECKING:
    from shared.orchestrator.events.models import Event
    from shared.orchestrator.service import Orchestrator
    from shared.orchestrator.tasks.models import Task
    from shared.workflows.models import Execution
    from shared.workflows.service import WorkflowService


@runtime.cached
def build_orchestrator() -> Orchestrator:
    """The orchestrator group's service, connected to the workflows and knowledge groups."""
    # Each group's wiring is imported where it is first needed (here and below), so a
    # function loads no other group's modules at init.
    from shared.orchestrator.wiring import build_orchestrator as orchestrator_parts

    return orchestrator_parts(
        on_task_finished=(resume_workflow_step, record_task_event),
        on_event_published=(start_event_workflows,),
    )


@runtime.cached
def build_workflow_service() -> WorkflowService:
    """The workflows group's service, its ended executions recorded as knowledge events."""
    from shared.orchestrator.tasks.wiring import build_task_store
    from shared.workflows.wiring import build_workflow_service as workflow_parts

    return workflow_parts(build_task_store(), on_end=(record_execution_event,))


def resume_workflow_step(team: str, task: Task) -> None:
    """A finished task that runs a workflow step moves its execution on."""
    if task.workflow_step_id:
        build_workflow_service().task_finished(team, task)


def start_event_workflows(team: str, event: Event) -> None:
    """A published event starts the team's workflows whose event trigger names its type."""
    build_workflow_service().event_published(
        team, event.event_type, event.payload, event.published_by
    )


def record_task_event(team: str, task: Task) -> None:
    """A finished task becomes a `workflow` event of the team's knowledge."""
    from shared.knowledge.wiring import record_workflow_event

    outcome = task.output_summary or task.error_message or ""
    record_workflow_event(
        wiring.build_knowledge_service(),
        team,
        event_id=f"task-{task.id}-{task.status}-{task.fence}",
        timestamp_ms=int((task.finished_at or task.updated_at).timestamp() * 1000),
        summary=f"Task '{task.name}' {task.status}" + (f": {outcome}" if outcome else ""),
        status=task.status,
        workflow_id=task.workflow_id or task.id,
        kind="workflow_step" if task.workflow_step_id else "task",
    )


def record_execution_event(team: str, execution: Execution, name: str) -> None:
    """An ended execution becomes a `workflow` event of the team's knowledge, in the same
    session as its steps' task events (the workflow id)."""
    from shared.knowledge.wiring import record_workflow_event

    steps = execution.steps.values()
    done = sum(1 for s in steps if s.status == "completed")
    summary = f"Workflow '{name}' {execution.status}: {done} of {len(steps)} steps completed"
    if execution.error:
        summary += f"; {execution.error}"
    ended = execution.ended_at or execution.started_at
    record_workflow_event(
        wiring.build_knowledge_service(),
        team,
        event_id=f"workflow-{execution.id}-{execution.status}",
        timestamp_ms=int(ended.timestamp() * 1000),
        summary=summary,
        status=execution.status,
        workflow_id=execution.workflow_id,
        kind="workflow",
    )
