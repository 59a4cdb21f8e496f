"""What the workflow service needs: its own records, the team's tasks, and (in AWS) the
state machines that drive executions."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from shared.domain_events.models import DomainEvent
from shared.orchestrator.tasks.models import Task
from shared.storage.pages import Page
from shared.workflows.models import Execution, Workflow, WorkflowDefinition


class WorkflowStore(Protocol):
    """Workflows and executions of one team at a time; every change is one conditional write."""

    def create(self, team: str, workflow: Workflow) -> None:
        """Insert a new workflow; `NameTaken(existing)` when the team has one by that name."""
        ...

    def get(self, team: str, workflow_id: str) -> Workflow | None: ...

    def find_by_name(self, team: str, name: str) -> Workflow | None: ...

    def replace(self, team: str, workflow: Workflow, expected_updated_at: datetime) -> None:
        """Write `workflow` over the stored one if that one was last updated at
        `expected_updated_at`; `StaleWrite` otherwise (a new version, a new execution)."""
        ...

    def list_team(self, team: str, *, limit: int, cursor: str | None = None) -> Page[Workflow]:
        """The team's workflows, newest first (then by id)."""
        ...

    def create_execution(
        self, team: str, execution: Execution, *, events: Sequence[DomainEvent] = ()
    ) -> None:
        """Insert a new execution with its domain `events` (one transaction: the outbox)."""
        ...

    def get_execution(self, team: str, execution_id: str) -> Execution | None: ...

    def save_execution(
        self, team: str, execution: Execution, *, events: Sequence[DomainEvent] = ()
    ) -> None:
        """Write `execution` if the stored revision is `execution.revision - 1`, with its
        domain `events` in the same transaction; `StaleWrite` otherwise, and no event
        (someone else advanced it: read again and redo the change)."""
        ...

    def open_executions(self, team: str | None = None) -> list[tuple[str, Execution]]:
        """(team, execution) of every running or paused execution (the local runner's sweep
        after a restart; one team's when `team` is given)."""
        ...


class StepTasks(Protocol):
    """The part of the task store a workflow uses (`shared.orchestrator.tasks.ports.TaskStore`
    satisfies it): steps are ordinary tasks, so the lease and requeue stay the tasks'."""

    def create(self, team: str, task: Task, *, events: Sequence[DomainEvent] = ()) -> None: ...

    def get(self, team: str, task_id: str) -> Task | None: ...

    def cancel(self, team: str, task_id: str, reason: str | None, at: datetime) -> Task: ...


class StateMachines(Protocol):
    """Step Functions, as the service drives it (AWS only; the embedded default runs the same
    semantics in `shared.workflows.service` itself)."""

    def ensure(self, team: str, workflow: Workflow, definition: WorkflowDefinition) -> str:
        """The ARN of the state machine compiled from `definition` (created or updated)."""
        ...

    def start(self, machine_arn: str, team: str, execution: Execution) -> tuple[str, str]:
        """Start an execution: its ARN and its console link."""
        ...

    def succeed(self, task_token: str, output: dict[str, object]) -> None:
        """SendTaskSuccess: the waiting step finished (a gone token is ignored)."""
        ...

    def fail(self, task_token: str, error: str, cause: str) -> None:
        """SendTaskFailure: the waiting step failed for good (a gone token is ignored)."""
        ...

    def stop(self, execution_arn: str, cause: str) -> None:
        """StopExecution (an execution already stopped is ignored)."""
        ...


class NameTaken(Exception):
    def __init__(self, existing: Workflow | None) -> None:
        super().__init__("name taken")
        self.existing = existing


class StaleWrite(Exception):
    """Another writer changed the record since it was read."""


class Schedules(Protocol):
    """EventBridge Scheduler, as schedule triggers use it (AWS only; the embedded default fires
    `rate(...)` schedules from its workflow worker)."""

    def put(self, team: str, workflow: Workflow) -> None:
        """Create or update the schedule that starts `workflow` (its trigger_config)."""
        ...

    def remove(self, team: str, workflow_id: str) -> None:
        """Delete the workflow's schedule, if it has one."""
        ...
