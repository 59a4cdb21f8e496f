"""The workflow service: definitions, executions, and the step life cycle on agent tasks.

One specification, two drivers:
- **embedded** (`machines is None`, `make serve` and the tests): this service decides when a step
  is ready (all its dependencies finished) and creates its task;
- **Step Functions** (AWS): the compiled state machine decides; each ready step arrives through
  the dispatcher (`step_ready`, carrying the callback token), and a finished step resumes the
  machine with SendTaskSuccess / SendTaskFailure.
Everything else — the record of each step, on_failure, pause, cancel, timeouts — is this module,
the same on both paths.

Every change to an execution is a read-modify-write guarded by its `revision` (`StaleWrite`
→ read again, redo). Side effects (creating and cancelling tasks, callbacks) run after the write
that decided them, and `sweep` redoes any a crash cut off, so a restart mid-execution loses
nothing: a step marked dispatched whose task does not exist gets it created.
"""

from __future__ import annotations

import contextlib
import json
import logging
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from shared.auth.principal import Principal
from shared.domain_events.emitter import DomainEvents
from shared.domain_events.models import Kind
from shared.orchestrator.tasks.models import OPEN_STATUSES, Task
from shared.orchestrator.tasks.ports import TaskConflict
from shared.orchestrator.tasks.service import task_fields
from shared.tools.errors import Conflict, InvalidArgument, NotFound
from shared.workflows.cron import CronError, next_fire
from shared.workflows.definition import parse_definition, resolve
from shared.workflows.models import (
    OPEN_EXECUTIONS,
    TERMINAL_STEPS,
    Execution,
    ExecutionStatus,
    ExecutionView,
    StepState,
    StepView,
    TriggerType,
    Workflow,
    WorkflowStatus,
    WorkflowView,
)
from shared.workflows.ports import (
    NameTaken,
    Schedules,
    StaleWrite,
    StateMachines,
    StepTasks,
    WorkflowStore,
)
from shared.workflows.triggers import RATE, check_trigger

logger = logging.getLogger("cairn.workflows")
# Called with (team, the ended execution, its workflow's name) once an execution completes,
# fails or is cancelled.
EndListener = Callable[[str, Execution, str], None]

MAX_WRITE_ATTEMPTS = 20
# An execution is one record (a DynamoDB item holds 400 KB): its definition, its start inputs
# and every step's output must fit. 64 KiB + 64 KiB + 50 steps x 4,000 characters do.
MAX_DEFINITION_BYTES = 65_536
MAX_INPUTS_BYTES = 65_536
MAX_STEP_TEXT = 4_000
STEP_FAILED = "StepFailed"  # the error name a failed step raises in the state machine


def new_workflow_id() -> str:
    """Creation time first (hex milliseconds), so ids sort newest-last in every store."""
    return f"wf_{int(time.time() * 1000):011x}{secrets.token_hex(6)}"


def new_execution_id() -> str:
    return "wfx_" + secrets.token_hex(10)


def _task_id() -> str:
    # The same shape as task.create's ids: a step's task is an ordinary task.
    return "tsk_" + secrets.token_hex(12)


def step_ref(execution_id: str, step: str) -> str:
    """The `workflow_step_id` a step's task carries: how a finished task finds its step."""
    return f"{execution_id}:{step}"


@dataclass
class _Effects:
    """What a decided change still has to do outside the execution record."""

    create: list[Task] = field(default_factory=list)
    cancel: list[str] = field(default_factory=list)
    succeed: list[tuple[str, dict[str, object]]] = field(default_factory=list)
    fail: list[tuple[str, str]] = field(default_factory=list)
    stop: str | None = None


class WorkflowService:
    def __init__(
        self,
        store: WorkflowStore,
        tasks: StepTasks,
        machines: StateMachines | None = None,
        clock: Callable[[], float] = time.time,
        schedules: Schedules | None = None,
        events: DomainEvents | None = None,
    ) -> None:
        self._store = store
        self._tasks = tasks
        self._machines = machines
        self._schedules = schedules
        self._clock = clock
        self._events = events or DomainEvents()
        self._end_listeners: list[EndListener] = []

    def on_end(self, listener: EndListener) -> None:
        """Call `listener(team, execution, workflow name)` once an execution ends.

        The knowledge group uses it to capture workflow completions as `workflow` events. A
        listener that raises is logged and skipped: the execution has ended regardless.
        """
        self._end_listeners.append(listener)

    def _now(self) -> datetime:
        return datetime.fromtimestamp(self._clock(), tz=UTC)

    # ------------------------------------------------------------------ definitions

    def create(
        self,
        principal: Principal,
        *,
        name: str,
        description: str | None,
        definition: dict[str, Any],
        trigger_type: TriggerType,
        trigger_config: dict[str, Any],
        tags: list[str],
    ) -> WorkflowView:
        """A new workflow, or a new version of the team's workflow called `name`.

        A new version applies to executions started after it; a running execution keeps the
        definition it started with.
        """
        _check_size("definition", definition, MAX_DEFINITION_BYTES)
        parsed = parse_definition(definition)
        check_trigger(trigger_type, trigger_config)
        team, now = principal.team, self._now()
        fresh = Workflow(
            id=new_workflow_id(),
            name=name.strip() or name,
            description=description,
            definition=parsed,
            trigger_type=trigger_type,
            trigger_config=trigger_config,
            tags=list(dict.fromkeys(tags)),
            created_by=principal.actor,
            created_at=now,
            updated_at=now,
        )
        for _ in range(MAX_WRITE_ATTEMPTS):
            try:
                self._store.create(team, fresh)
                self._sync_schedule(team, fresh)
                return self._view(team, fresh)
            except NameTaken as taken:
                existing = taken.existing or self._store.find_by_name(team, fresh.name)
                if existing is None:
                    continue
            newer = existing.model_copy(
                update={
                    "version": existing.version + 1,
                    "description": description,
                    "definition": parsed,
                    "trigger_type": trigger_type,
                    "trigger_config": trigger_config,
                    "tags": fresh.tags,
                    "updated_at": max(now, existing.updated_at + timedelta(microseconds=1)),
                    "state_machine_arn": None,
                }
            )
            try:
                self._store.replace(team, newer, existing.updated_at)
                self._sync_schedule(team, newer)
                return self._view(team, newer)
            except StaleWrite:
                continue
        raise Conflict(
            f"`name`: workflow {name!r} is being changed concurrently; retry", field="name"
        )

    def get(self, principal: Principal, workflow_id: str) -> WorkflowView | None:
        workflow = self._store.get(principal.team, workflow_id)
        if workflow is None:
            return None
        self._check_timeouts(principal.team, workflow.current_execution_id)
        return self._view(principal.team, self._store.get(principal.team, workflow_id) or workflow)

    def list_workflows(
        self, principal: Principal, *, status: WorkflowStatus | None, limit: int
    ) -> list[WorkflowView]:
        """The team's workflows, newest first; `status` is that of each newest execution."""
        found: list[WorkflowView] = []
        cursor: str | None = None
        while True:
            page = self._store.list_team(principal.team, limit=limit, cursor=cursor)
            for workflow in page.items:
                view = self._view(principal.team, workflow)
                if status is None or view.status == status:
                    found.append(view)
                    if len(found) == limit:
                        return found
            if page.next_cursor is None or status is None:
                return found
            cursor = page.next_cursor

    # ------------------------------------------------------------------ executions

    def start(self, principal: Principal, workflow_id: str, inputs: dict[str, Any]) -> WorkflowView:
        """Start the workflow's newest version; refused while an execution is open."""
        _check_size("inputs", inputs, MAX_INPUTS_BYTES)
        team = principal.team
        workflow = self._workflow(team, workflow_id)
        return self.start_workflow(team, workflow, inputs, started_by=principal.actor)

    def start_workflow(
        self, team: str, workflow: Workflow, inputs: dict[str, Any], *, started_by: str
    ) -> WorkflowView:
        """Start `workflow` for `team` (the tool, and the schedule and event triggers)."""
        if workflow.current_execution_id:
            current = self._store.get_execution(team, workflow.current_execution_id)
            if current is not None and current.status in OPEN_EXECUTIONS:
                raise Conflict(
                    f"`workflow_id`: workflow {workflow.id!r} has an execution "
                    f"{current.status} ({current.id}); cancel it or wait for it to end",
                    field="workflow_id",
                    holder={"execution_id": current.id, "status": current.status},
                )
        now = self._now()
        execution = Execution(
            id=new_execution_id(),
            workflow_id=workflow.id,
            version=workflow.version,
            definition=workflow.definition,
            inputs=inputs,
            steps={step.name: StepState(name=step.name) for step in workflow.definition.steps},
            started_by=started_by,
            started_at=now,
        )
        if self._machines is not None:
            arn = workflow.state_machine_arn or self._machines.ensure(
                team, workflow, workflow.definition
            )
            workflow = workflow.model_copy(update={"state_machine_arn": arn})
        started = self._events.event(
            team, Kind.WORKFLOW_STARTED, started_by, **_execution_fields(execution)
        )
        self._store.create_execution(team, execution, events=[started])
        updated = workflow.model_copy(
            update={
                "current_execution_id": execution.id,
                "updated_at": max(now, workflow.updated_at + timedelta(microseconds=1)),
            }
        )
        try:
            self._store.replace(team, updated, workflow.updated_at)
        except StaleWrite as exc:
            raise Conflict(
                f"`workflow_id`: workflow {workflow.id!r} changed while starting (another "
                "start or a new version); call workflow.status, then retry",
                field="workflow_id",
            ) from exc
        if self._machines is not None and updated.state_machine_arn:
            execution_arn, console = self._machines.start(
                updated.state_machine_arn, team, execution
            )
            self._change(
                team,
                execution.id,
                lambda ex, fx: _set(ex, execution_arn=execution_arn, console_url=console),
            )
        else:
            self._change(team, execution.id, self._advance)
        return self._view(team, updated)

    def pause(self, principal: Principal, workflow_id: str) -> WorkflowView:
        """Hold steps that become ready from now on; steps already dispatched run on."""
        return self._control(principal, workflow_id, "pause")

    def resume(self, principal: Principal, workflow_id: str) -> WorkflowView:
        """Dispatch the held steps and let new ones through again."""
        return self._control(principal, workflow_id, "resume")

    def cancel(self, principal: Principal, workflow_id: str) -> WorkflowView:
        """Stop the execution and cancel its open tasks; steps not started are skipped."""
        return self._control(principal, workflow_id, "cancel")

    def _control(self, principal: Principal, workflow_id: str, action: str) -> WorkflowView:
        team = principal.team
        workflow = self._workflow(team, workflow_id)
        execution = (
            self._store.get_execution(team, workflow.current_execution_id)
            if workflow.current_execution_id
            else None
        )
        if execution is None or execution.status not in OPEN_EXECUTIONS:
            state = execution.status if execution else "never started"
            raise Conflict(
                f"`workflow_id`: cannot {action} workflow {workflow_id!r}: it has no running "
                f"or paused execution (newest: {state}); start it with workflow.start",
                field="workflow_id",
            )

        def decide(ex: Execution, fx: _Effects) -> bool:
            if ex.status not in OPEN_EXECUTIONS:
                raise Conflict(
                    f"`workflow_id`: cannot {action} workflow {workflow_id!r}: its execution "
                    f"is {ex.status}",
                    field="workflow_id",
                )
            if action == "pause":
                if ex.status == "paused":
                    raise Conflict(
                        f"`workflow_id`: workflow {workflow_id!r} is already paused",
                        field="workflow_id",
                    )
                ex.status = "paused"
                return True
            if action == "resume":
                if ex.status != "paused":
                    raise Conflict(
                        f"`workflow_id`: workflow {workflow_id!r} is running, not paused",
                        field="workflow_id",
                    )
                ex.status = "running"
                for state in ex.steps.values():
                    if state.status == "held":
                        self._dispatch(ex, state, fx)
                self._advance(ex, fx)
                return True
            self._end(ex, fx, "cancelled", f"cancelled by {principal.actor}")
            return True

        self._change(team, execution.id, decide)
        return self._view(team, self._workflow(team, workflow_id))

    # ------------------------------------------------------------------ triggers

    def _team_workflows(self, team: str) -> list[Workflow]:
        found: list[Workflow] = []
        cursor: str | None = None
        while True:
            page = self._store.list_team(team, limit=100, cursor=cursor)
            found += page.items
            if page.next_cursor is None:
                return found
            cursor = page.next_cursor

    def event_published(
        self, team: str, event_type: str, payload: dict[str, Any], published_by: str
    ) -> list[str]:
        """Start every team workflow whose event trigger names `event_type`, with the event's
        payload as inputs (the events seam). One with an open execution is left running.
        Returns the ids of the workflows started."""
        started: list[str] = []
        for workflow in self._team_workflows(team):
            if (
                workflow.trigger_type != "event"
                or workflow.trigger_config.get("event_type") != event_type
            ):
                continue
            try:
                self.start_workflow(team, workflow, dict(payload), started_by=published_by)
            except Conflict:
                logger.info(
                    "event trigger skipped: an execution is open", extra={"id": workflow.id}
                )
                continue
            started.append(workflow.id)
        return started

    def _sync_schedule(self, team: str, workflow: Workflow) -> None:
        """AWS: the workflow's EventBridge schedule follows its newest trigger."""
        if self._schedules is None:
            return
        if workflow.trigger_type == "schedule":
            self._schedules.put(team, workflow)
        else:
            self._schedules.remove(team, workflow.id)

    def scheduled_start(self, team: str, workflow_id: str) -> bool:
        """A schedule fired: start the workflow with its trigger's inputs. False when it is no
        longer schedule-triggered (a newer version) or an execution is still open."""
        workflow = self._store.get(team, workflow_id)
        if workflow is None or workflow.trigger_type != "schedule":
            return False
        inputs = workflow.trigger_config.get("inputs") or {}
        try:
            self.start_workflow(team, workflow, dict(inputs), started_by="schedule")
        except Conflict:
            return False
        return True

    def run_due_schedules(self, team: str) -> list[str]:
        """Start the team's schedules that are due (the embedded default's stand-in for
        EventBridge Scheduler). A `rate(...)` is due when the newest execution started a period
        ago or more (or, never started, a period after creation); a `cron(...)` when it has
        fired since then, in the schedule's timezone. Returns the ids started."""
        now = self._now()
        started: list[str] = []
        for workflow in self._team_workflows(team):
            if workflow.trigger_type != "schedule":
                continue
            since = workflow.created_at
            if workflow.current_execution_id:
                current = self._store.get_execution(team, workflow.current_execution_id)
                if current is not None:
                    since = current.started_at
            if not _schedule_due(workflow, since, now):
                continue
            inputs = workflow.trigger_config.get("inputs") or {}
            try:
                self.start_workflow(team, workflow, dict(inputs), started_by="schedule")
            except Conflict:
                continue
            started.append(workflow.id)
        return started

    # ------------------------------------------------------------------ the step life cycle

    def step_ready(self, team: str, execution_id: str, step: str, task_token: str) -> None:
        """The state machine reached `step` (the dispatcher's call): create its task, or hold it
        while the execution is paused. A repeated message for the same token is a no-op."""

        def decide(ex: Execution, fx: _Effects) -> bool:
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
                self._dispatch(ex, state, fx)
            return True

        self._change(team, execution_id, decide)

    def task_finished(self, team: str, task: Task) -> None:
        """A task was completed or failed (the orchestrator's finish hook): if it runs a step
        of an execution, record the outcome and move the execution on."""
        if not task.workflow_step_id or ":" not in task.workflow_step_id:
            return
        execution_id, step = task.workflow_step_id.split(":", 1)
        if self._store.get_execution(team, execution_id) is None:
            return

        def decide(ex: Execution, fx: _Effects) -> bool:
            state = ex.steps.get(step)
            if state is None or state.task_id != task.id or state.status != "dispatched":
                return False  # an older attempt, or the execution moved on (cancel, timeout)
            self._finish_from(ex, state, task, fx)
            return True

        self._change(team, execution_id, decide)

    def sweep(self, team: str | None = None) -> int:
        """Redo what a crash cut off and time out overdue steps, for every open execution
        (one team's when given). Returns how many executions it changed."""
        changed = 0
        for owner, execution in self._store.open_executions(team):
            changed += self._check(owner, execution.id)
        return changed

    def _check_timeouts(self, team: str, execution_id: str | None) -> None:
        if execution_id:
            self._check(team, execution_id)

    def _check(self, team: str, execution_id: str) -> int:
        now = self._now()
        missing: list[Task] = []

        def decide(ex: Execution, fx: _Effects) -> bool:
            if ex.status not in OPEN_EXECUTIONS:
                return False
            touched = False
            for state in ex.steps.values():
                if state.status != "dispatched" or state.task_id is None:
                    continue
                task = self._tasks.get(team, state.task_id)
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
            if not touched and self._machines is None:
                before = [s.status for s in ex.steps.values()]
                self._advance(ex, fx)
                touched = before != [s.status for s in ex.steps.values()]
            return touched

        changed = self._change(team, execution_id, decide)
        for task in missing:
            self._create_task(team, task)
        return int(changed or bool(missing))

    def _finish_from(self, ex: Execution, state: StepState, task: Task, fx: _Effects) -> None:
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
            self._advance(ex, fx)
        else:
            self._step_failed(ex, state, task.error_message or "the task failed", fx)

    # ------------------------------------------------------------------ decisions

    def _step_failed(self, ex: Execution, state: StepState, error: str, fx: _Effects) -> None:
        """Apply the step's on_failure: retry (a new task), continue, or fail the execution."""
        step = ex.definition.step(state.name)
        state.error = _clip(error)
        if step.on_failure == "retry" and state.attempt <= step.max_retries:
            if ex.status == "paused":
                state.status = "held"
            else:
                self._dispatch(ex, state, fx)
            return
        state.status = "failed"
        state.ended_at = self._now()
        if step.on_failure == "continue":
            if state.task_token:
                # The state machine's Catch on this step moves on, like the embedded driver.
                fx.fail.append((state.task_token, error))
            self._advance(ex, fx)
            return
        if state.task_token:
            fx.fail.append((state.task_token, error))
        self._end(ex, fx, "failed", f"step {state.name!r} failed: {error}", machine_fails=True)

    def _advance(self, ex: Execution, fx: _Effects) -> bool:
        """Embedded driver: dispatch (or hold) every step whose dependencies all finished;
        end the execution when every step has. Step Functions decides readiness itself."""
        if ex.status not in OPEN_EXECUTIONS:
            return True
        if self._machines is None:
            for step in ex.definition.steps:
                state = ex.steps[step.name]
                if state.status != "waiting":
                    continue
                if all(ex.steps[d].status in ("completed", "failed") for d in step.depends_on):
                    if ex.status == "paused":
                        state.status = "held"
                    else:
                        self._dispatch(ex, state, fx)
        if all(state.status in TERMINAL_STEPS for state in ex.steps.values()):
            ex.status = "completed"
            ex.ended_at = self._now()
        return True

    def _dispatch(self, ex: Execution, state: StepState, fx: _Effects) -> None:
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

    def _end(
        self,
        ex: Execution,
        fx: _Effects,
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

    # ------------------------------------------------------------------ plumbing

    def _change(
        self, team: str, execution_id: str, decide: Callable[[Execution, _Effects], bool]
    ) -> bool:
        """Read, decide, write with the revision check (again on `StaleWrite`), then act."""
        for _ in range(MAX_WRITE_ATTEMPTS):
            execution = self._store.get_execution(team, execution_id)
            if execution is None:
                raise NotFound(f"no execution {execution_id!r} in your team")
            fx = _Effects()
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
                    self._events.event(
                        team,
                        _END_EVENTS[execution.status],
                        execution.started_by,
                        **_execution_fields(execution),
                    )
                )
            try:
                self._store.save_execution(team, execution, events=ended)
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
        workflow = self._store.get(team, execution.workflow_id)
        name = workflow.name if workflow else execution.workflow_id
        for listener in self._end_listeners:
            try:
                listener(team, execution, name)
            except Exception:
                logger.exception(
                    "a workflow end listener failed", extra={"execution_id": execution.id}
                )

    def _apply(self, team: str, fx: _Effects) -> None:
        for task in fx.create:
            self._create_task(team, task)
        for task_id in fx.cancel:
            with contextlib.suppress(TaskConflict):  # already closed: nothing to cancel
                self._tasks.cancel(team, task_id, "workflow ended", self._now())
        if self._machines is not None:
            if fx.stop:
                self._machines.stop(fx.stop, "cancelled")
            for token, output in fx.succeed:
                self._machines.succeed(token, output)
            for token, cause in fx.fail:
                self._machines.fail(token, STEP_FAILED, cause)

    def _create_task(self, team: str, task: Task) -> None:
        if self._tasks.get(team, task.id) is None:
            created = self._events.event(
                team, Kind.TASK_CREATED, task.created_by, **task_fields(task)
            )
            self._tasks.create(team, task, events=[created])

    def _workflow(self, team: str, workflow_id: str) -> Workflow:
        workflow = self._store.get(team, workflow_id)
        if workflow is None:
            raise NotFound(
                f"`workflow_id`: no workflow with id {workflow_id!r} in your team; use an id "
                "from workflow.create or workflow.list",
                field="workflow_id",
            )
        return workflow

    def _view(self, team: str, workflow: Workflow) -> WorkflowView:
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
            execution=self._execution_view(team, execution) if execution else None,
        )

    def _execution_view(self, team: str, ex: Execution) -> ExecutionView:
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


_END_EVENTS: dict[str, Kind] = {
    "completed": Kind.WORKFLOW_SUCCEEDED,
    "failed": Kind.WORKFLOW_FAILED,
    "cancelled": Kind.WORKFLOW_CANCELLED,
}


def _execution_fields(execution: Execution) -> dict[str, str | int | None]:
    """What a workflow event carries: ids, version and status (never inputs or errors)."""
    return {
        "workflow_id": execution.workflow_id,
        "execution_id": execution.id,
        "workflow_version": execution.version,
        "status": execution.status,
    }


def _check_size(field: str, value: Any, limit: int) -> None:
    size = len(json.dumps(value, separators=(",", ":")).encode())
    if size > limit:
        raise InvalidArgument(
            f"`{field}` is {size} bytes as JSON; at most {limit} (pass large data as artifacts "
            "and refer to their ids)",
            field=field,
        )


def _clip(text: str | None) -> str | None:
    """A step's output or error as the execution keeps it (the task keeps the whole text)."""
    if text is None or len(text) <= MAX_STEP_TEXT:
        return text
    return text[: MAX_STEP_TEXT - 1] + "…"


def _schedule_due(workflow: Workflow, since: datetime, now: datetime) -> bool:
    period = rate_seconds(workflow)
    if period is not None:
        return (now - since).total_seconds() >= period
    expression = str(workflow.trigger_config.get("expression", ""))
    timezone = workflow.trigger_config.get("timezone")
    try:
        fire = next_fire(expression, since, timezone if isinstance(timezone, str) else None)
    except CronError:  # checked at create; a catalog change must not stop the other schedules
        logger.warning("unusable schedule", extra={"workflow_id": workflow.id})
        return False
    return fire is not None and fire <= now


def rate_seconds(workflow: Workflow) -> int | None:
    """The period of a `rate(n unit)` schedule in seconds; None for cron or other triggers."""
    match = RATE.match(str(workflow.trigger_config.get("expression", "")))
    if match is None:
        return None
    count = int(str(workflow.trigger_config["expression"]).split("(")[1].split()[0])
    unit = match.group(1).rstrip("s")
    return count * {"minute": 60, "hour": 3600, "day": 86400}[unit]


def _set(ex: Execution, **fields: Any) -> bool:
    for name, value in fields.items():
        setattr(ex, name, value)
    return True
