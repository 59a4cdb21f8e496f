"""What the workflow tools answer: a workflow with its newest execution, each step with who
holds it now (read from its task's lease, never copied into the execution)."""

from __future__ import annotations

from shared.workflows.models import (
    Execution,
    ExecutionView,
    StepView,
    Workflow,
    WorkflowView,
)
from shared.workflows.ports import StepTasks, WorkflowStore


class WorkflowViews:
    def __init__(self, store: WorkflowStore, tasks: StepTasks) -> None:
        self._store = store
        self._tasks = tasks

    def workflow(self, team: str, workflow: Workflow) -> WorkflowView:
        """`workflow` with its newest execution, as workflow.status answers it."""
        execution = (
            self._store.get_execution(team, workflow.current_execution_id)
            if workflow.current_execution_id
            else None
        )
        return WorkflowView(
            id=workflow.id,
            name=workflow.name,
            description=workflow.description,
            version=workflow.version,
            status=execution.status if execution else "created",
            definition=workflow.definition,
            trigger_type=workflow.trigger_type,
            trigger_config=workflow.trigger_config,
            tags=workflow.tags,
            created_by=workflow.created_by,
            created_at=workflow.created_at,
            updated_at=workflow.updated_at,
            execution=self.execution(team, execution) if execution else None,
        )

    def execution(self, team: str, ex: Execution) -> ExecutionView:
        steps = []
        for step in ex.definition.steps:
            state = ex.steps[step.name]
            agent, started = state.agent, state.started_at
            if state.status == "dispatched" and state.task_id:
                # Who holds the step right now is the task's lease: read it, do not copy it.
                task = self._tasks.get(team, state.task_id)
                if task is not None:
                    agent, started = task.claimed_by, task.claimed_at
            steps.append(
                StepView(
                    name=step.name,
                    status=state.status,
                    requires_capability=step.requires_capability,
                    depends_on=step.depends_on,
                    attempt=state.attempt,
                    task_id=state.task_id,
                    agent=agent,
                    started_at=started,
                    ended_at=state.ended_at,
                    output=state.output,
                    artifact=state.artifact,
                    error=state.error,
                )
            )
        return ExecutionView(
            id=ex.id,
            version=ex.version,
            status=ex.status,
            inputs=ex.inputs,
            started_by=ex.started_by,
            started_at=ex.started_at,
            ended_at=ex.ended_at,
            error=ex.error,
            steps=steps,
            outputs=ex.outputs(),
            execution_arn=ex.execution_arn,
            console_url=ex.console_url,
        )
