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
        # The view repeats the workflow's own fields (read by name), plus what it is now.
        return WorkflowView.model_validate(
            {
                **dict(workflow),
                "status": execution.status if execution else "created",
                "execution": self.execution(team, execution) if execution else None,
            }
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
                StepView.model_validate(
                    {
                        **dict(state),
                        "requires_capability": step.requires_capability,
                        "depends_on": step.depends_on,
                        "agent": agent,
                        "started_at": started,
                    }
                )
            )
        return ExecutionView.model_validate({**dict(ex), "steps": steps, "outputs": ex.outputs()})
