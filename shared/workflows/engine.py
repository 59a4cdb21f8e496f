"""The step life cycle of workflow executions, on agent tasks: a ready step gets its task (or
is held while paused), a finished task records its step's outcome and moves the execution on,
`on_failure` retries, continues or fails it, and `sweep` redoes what a crash cut off.

Two drivers (`shared.workflows.service`): embedded (`machines is None`), where `advance`
decides which steps are ready; Step Functions, where the machine decides and each ready step
arrives through `step_ready` with its callback token. Every change to an execution is a
read-modify-write guarded by its `revision` (`change`): side effects (tasks created and
cancelled, callbacks) run after the write that decided them.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from shared.domain_events.emitter import DomainEvents
from shared.domain_events.models import Kind
from shared.orchestrator.tasks.models import OPEN_STATUSES, Task
from shared.orchestrator.tasks.ports import TaskConflict
from shared.orchestrator.tasks.service import task_fields
from shared.tools.errors import Conflict, InvalidArgument, NotFound
from shared.workflows.definition import resolve
from shared.workflows.models import (
    OPEN_EXECUTIONS,
    TERMINAL_STEPS,
    Execution,
    ExecutionStatus,
    StepState,
)
from shared.workflows.ports import StaleWrite, StateMachines, StepTasks, WorkflowStore

logger = logging.getLogger("cairn.workflows")
# Called with (team, the ended execution, its workflow's name) once an execution completes,
# fails or is cancelled.
EndListener = Callable[[str, Execution, str], None]

MAX_WRITE_ATTEMPTS = 20
# An execution is one record: every step's output and error is kept clipped to this.
MAX_STEP_TEXT = 4_000
STEP_FAILED = "StepFailed"  # the error name a failed step raises in the state machine


def _task_id() -> str:
    # The same shape as task.create's ids: a step's task is an ordinary task.
    return "tsk_" + secrets.token_hex(12)


def step_ref(execution_id: str, step: str) -> str:
    """The `workflow_step_id` a step's task carries: how a finished task finds its step."""
    return f"{execution_id}:{step}"


@dataclass
class Effects:
    """What a decided change still has to do outside the execution record."""

    create: list[Task] = field(default_factory=list)
    cancel: list[str] = field(default_factory=list)
    succeed: list[tuple[str, dict[str, object]]] = field(default_factory=list)
    fail: list[tuple[str, str]] = field(default_factory=list)
    stop: str | None = None


@dataclass(eq=False)
class StepEngine:
    """Executions' steps and their tasks; `machines` is None for the embedded driver."""

    store: WorkflowStore
    tasks: StepTasks
    machines: StateMachines | None
    clock: Callable[[], float]
    events: DomainEvents
    _end_listeners: list[EndListener] = field(default_factory=list, init=False)

    def on_end(self, listener: EndListener) -> None:
        """Call `listener(team, execution, workflow name)` once an execution ends (a listener
        that raises is logged and skipped: the execution has ended regardless)."""
        self._end_listeners.append(listener)

    def _now(self) -> datetime:
        return datetime.fromtimestamp(self.clock(), tz=UTC)

    def step_ready(self, team: str, execution_id: str, step: str, task_token: str) -> None:
        """The state machine reached `step` (the dispatcher's call): create its task, or hold it
        while the execution is paused. A repeated message for the same token is a no-op."""

        def decide(ex: Execution, fx: Effects) -> bool:
            state = ex.steps.get(step)
            if state is None:
                raise InvalidArgument(f"execution {execution_id} has no step {step!r}")
            if state.task_token == task_token and state.status in ("dispatched", "held"):
                return False  # SQS delivers at least once
            state.task_token = task_token
            if ex.status not in OPEN_EXECUTIONS:
                fx.fail.append((task_token, f"the execution is {ex.status}"))
                return True
            if ex.status == "paused":
                state.status = "held"
            else:
                self.dispatch(ex, state, fx)
            return True

        self.change(team, execution_id, decide)

    def task_finished(self, team: str, task: Task) -> None:
        """A task was completed or failed (the orchestrator's finish hook): if it runs a step
        of an execution, record the outcome and move the execution on."""
        if not task.workflow_step_id or ":" not in task.workflow_step_id:
            return
        execution_id, step = task.workflow_step_id.split(":", 1)
        if self.store.get_execution(team, execution_id) is None:
            return

        def decide(ex: Execution, fx: Effects) -> bool:
            state = ex.steps.get(step)
            if state is None or state.task_id != task.id or state.status != "dispatched":
                return False  # an older attempt, or the execution moved on (cancel, timeout)
            self._finish_from(ex, state, task, fx)
            return True

        self.change(team, execution_id, decide)

    def sweep(self, team: str | None = None) -> int:
        """Redo what a crash cut off and time out overdue steps, for every open execution
        (one team's when given). Returns how many executions it changed."""
        changed = 0
        for owner, execution in self.store.open_executions(team):
            changed += self.check(owner, execution.id)
        return changed

    def check(self, team: str, execution_id: str) -> int:
        """Redo what a crash cut off and time out overdue steps of one open execution; 1
        when it changed it (or wrote a missing task), else 0."""
        now = self._now()
        missing: list[Task] = []

        def decide(ex: Execution, fx: Effects) -> bool:
            if ex.status not in OPEN_EXECUTIONS:
                return False
            touched = False
            for state in ex.steps.values():
                if state.status != "dispatched" or state.task_id is None:
                    continue
                task = self.tasks.get(team, state.task_id)
                if task is None:
                    # Decided, then the process died before the task was written: write it.
                    missing.append(self._task_for(ex, state))
                    continue
                if task.status in ("completed", "failed"):
                    # Finished while the hook could not run (a crash): apply it now.
                    self._finish_from(ex, state, task, fx)
                    touched = True
                elif task.status == "cancelled" or (state.deadline and now >= state.deadline):
                    why = (
                        f"timed out after {ex.definition.step(state.name).timeout_seconds} s"
                        if task.status != "cancelled"
                        else f"its task was cancelled ({task.cancel_reason or 'no reason'})"
                    )
                    if task.status in OPEN_STATUSES:
                        fx.cancel.append(task.id)
                    self._step_failed(ex, state, why, fx)
                    touched = True
            if not touched and self.machines is None:
                before = [s.status for s in ex.steps.values()]
                self.advance(ex, fx)
                touched = before != [s.status for s in ex.steps.values()]
            return touched

        changed = self.change(team, execution_id, decide)
        for task in missing:
            self._create_task(team, task)
        return int(changed or bool(missing))

    def _finish_from(self, ex: Execution, state: StepState, task: Task, fx: Effects) -> None:
        """Record the outcome of the step's finished task and apply it."""
        state.agent = task.claimed_by
        state.started_at = task.claimed_at or task.started_at
        if task.status == "completed":
            state.status = "completed"
            state.ended_at = task.finished_at or self._now()
            state.error = None
            state.output = _clip(task.output_summary)
            state.artifact = task.output_artifact_id
            if state.task_token:
                fx.succeed.append((state.task_token, state.view().model_dump()))
            self.advance(ex, fx)
        else:
            self._step_failed(ex, state, task.error_message or "the task failed", fx)

    def _step_failed(self, ex: Execution, state: StepState, error: str, fx: Effects) -> None:
        """Apply the step's on_failure: retry (a new task), continue, or fail the execution."""
        step = ex.definition.step(state.name)
        state.error = _clip(error)
        if step.on_failure == "retry" and state.attempt <= step.max_retries:
            if ex.status == "paused":
                state.status = "held"
            else:
                self.dispatch(ex, state, fx)
            return
        state.status = "failed"
        state.ended_at = self._now()
        if step.on_failure == "continue":
            if state.task_token:
                # The state machine's Catch on this step moves on, like the embedded driver.
                fx.fail.append((state.task_token, error))
            self.advance(ex, fx)
            return
        if state.task_token:
            fx.fail.append((state.task_token, error))
        self.end(ex, fx, "failed", f"step {state.name!r} failed: {error}", machine_fails=True)

    def advance(self, ex: Execution, fx: Effects) -> bool:
        """Embedded driver: dispatch (or hold) every step whose dependencies all finished;
        end the execution when every step has. Step Functions decides readiness itself."""
        if ex.status not in OPEN_EXECUTIONS:
            return True
        if self.machines is None:
            for step in ex.definition.steps:
                state = ex.steps[step.name]
                if state.status != "waiting":
                    continue
                if all(ex.steps[d].status in ("completed", "failed") for d in step.depends_on):
                    if ex.status == "paused":
                        state.status = "held"
                    else:
                        self.dispatch(ex, state, fx)
        if all(state.status in TERMINAL_STEPS for state in ex.steps.values()):
            ex.status = "completed"
            ex.ended_at = self._now()
        return True

    def dispatch(self, ex: Execution, state: StepState, fx: Effects) -> None:
        """Give `state` a new task (the next attempt) and mark it dispatched."""
        state.attempt += 1
        state.task_id = _task_id()
        state.task_ids.append(state.task_id)
        state.status = "dispatched"
        state.agent = None
        state.started_at = None
        state.ended_at = None
        now = self._now()
        state.deadline = now + timedelta(seconds=ex.definition.step(state.name).timeout_seconds)
        fx.create.append(self._task_for(ex, state))

    def _task_for(self, ex: Execution, state: StepState) -> Task:
        step = ex.definition.step(state.name)
        now = self._now()
        assert state.task_id is not None
        return Task(
            id=state.task_id,
            name=f"{state.name}",
            description=step.description,
            requires_capability=step.requires_capability,
            priority=step.priority,
            input_data=resolve(step.inputs, ex.inputs, ex.outputs()),
            workflow_id=ex.workflow_id,
            workflow_step_id=step_ref(ex.id, state.name),
            created_by=ex.started_by,
            created_at=now,
            updated_at=now,
        )

    def end(
        self,
        ex: Execution,
        fx: Effects,
        status: ExecutionStatus,
        error: str | None,
        *,
        machine_fails: bool = False,
    ) -> None:
        """Close the execution: open tasks cancelled, steps not started skipped."""
        ex.status = status
        ex.ended_at = self._now()
        ex.error = error
        for state in ex.steps.values():
            waiting_machine = state.task_token and state.status in ("dispatched", "held")
            if state.status == "dispatched":
                state.status = "cancelled"
                state.ended_at = ex.ended_at
                if state.task_id:
                    fx.cancel.append(state.task_id)
            elif state.status in ("waiting", "held"):
                state.status = "skipped"
            if waiting_machine and state.task_token and not machine_fails:
                # After StopExecution these tokens are gone (ignored); answering them anyway
                # releases a machine whose stop has not reached the waiting state yet.
                fx.fail.append((state.task_token, f"the execution was {status}"))
        if ex.execution_arn and not machine_fails:
            fx.stop = ex.execution_arn

    def change(
        self, team: str, execution_id: str, decide: Callable[[Execution, Effects], bool]
    ) -> bool:
        """Read, decide, write with the revision check (again on `StaleWrite`), then act."""
        for _ in range(MAX_WRITE_ATTEMPTS):
            execution = self.store.get_execution(team, execution_id)
            if execution is None:
                raise NotFound(f"no execution {execution_id!r} in your team")
            fx = Effects()
            before = execution.status
            if not decide(execution, fx):
                return False
            execution.revision += 1
            ended = []
            if execution.status != before and execution.status in _END_EVENTS:
                # The engine ends an execution (its last step, a failed step, a cancel): the
                # event's actor is who started it; a cancel's caller is in its `error`. It is
                # written with the execution's own write (a stale write writes neither).
                ended.append(
                    self.events.event(
                        team,
                        _END_EVENTS[execution.status],
                        execution.started_by,
                        **execution_fields(execution),
                    )
                )
            try:
                self.store.save_execution(team, execution, events=ended)
            except StaleWrite:
                continue
            if ended:
                self._ended(team, execution)
            self._apply(team, fx)
            return True
        raise Conflict(f"execution {execution_id!r} is changing too fast; retry")

    def _ended(self, team: str, execution: Execution) -> None:
        if not self._end_listeners:
            return
        workflow = self.store.get(team, execution.workflow_id)
        name = workflow.name if workflow else execution.workflow_id
        for listener in self._end_listeners:
            try:
                listener(team, execution, name)
            except Exception:
                logger.exception(
                    "a workflow end listener failed", extra={"execution_id": execution.id}
                )

    def _apply(self, team: str, fx: Effects) -> None:
        for task in fx.create:
            self._create_task(team, task)
        for task_id in fx.cancel:
            with contextlib.suppress(TaskConflict):  # already closed: nothing to cancel
                self.tasks.cancel(team, task_id, "workflow ended", self._now())
        if self.machines is not None:
            if fx.stop:
                self.machines.stop(fx.stop, "cancelled")
            for token, output in fx.succeed:
                self.machines.succeed(token, output)
            for token, cause in fx.fail:
                self.machines.fail(token, STEP_FAILED, cause)

    def _create_task(self, team: str, task: Task) -> None:
        if self.tasks.get(team, task.id) is None:
            created = self.events.event(
                team, Kind.TASK_CREATED, task.created_by, **task_fields(task)
            )
            self.tasks.create(team, task, events=[created])


_END_EVENTS: dict[str, Kind] = {
    "completed": Kind.WORKFLOW_SUCCEEDED,
    "failed": Kind.WORKFLOW_FAILED,
    "cancelled": Kind.WORKFLOW_CANCELLED,
}


def execution_fields(execution: Execution) -> dict[str, str | int | None]:
    """What a workflow event carries: ids, version and status (never inputs or errors)."""
    return {
        "workflow_id": execution.workflow_id,
        "execution_id": execution.id,
        "workflow_version": execution.version,
        "status": execution.status,
    }


def _clip(text: str | None) -> str | None:
    """A step's output or error as the execution keeps it (the task keeps the whole text)."""
    if text is None or len(text) <= MAX_STEP_TEXT:
        return text
    return text[: MAX_STEP_TEXT - 1] + "…"


def set_fields(ex: Execution, **fields: Any) -> bool:
    for name, value in fields.items():
        setattr(ex, name, value)
    return True
