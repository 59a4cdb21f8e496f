"""The workflow service: the workflow tools' one entry point. It keeps the definitions (a
workflow and its versions) and starts and controls executions; the rest is its parts:

- `engine.StepEngine`: the step life cycle on agent tasks (readiness, outcomes, on_failure,
  timeouts, the sweep after a crash), for both drivers:
  - **embedded** (`machines is None`, `make serve` and the tests): the engine decides when a
    step is ready (all its dependencies finished) and creates its task;
  - **Step Functions** (AWS): the compiled state machine decides; each ready step arrives
    through the dispatcher (`step_ready`, carrying the callback token), and a finished step
    resumes the machine with SendTaskSuccess / SendTaskFailure;
- `triggering.WorkflowTriggers`: event and schedule triggers;
- `views.WorkflowViews`: what the tools answer.

Every change to an execution is a read-modify-write guarded by its `revision` (`StaleWrite`
→ read again, redo). Side effects (creating and cancelling tasks, callbacks) run after the write
that decided them, and `sweep` redoes any a crash cut off, so a restart mid-execution loses
nothing: a step marked dispatched whose task does not exist gets it created.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from shared.auth.principal import Principal
from shared.domain_events.emitter import DomainEvents
from shared.domain_events.models import Kind
from shared.orchestrator.tasks.models import Task
from shared.tools.errors import Conflict, InvalidArgument, NotFound
from shared.workflows.definition import parse_definition
from shared.workflows.engine import (
    MAX_WRITE_ATTEMPTS,
    Effects,
    EndListener,
    StepEngine,
    execution_fields,
    set_fields,
)
from shared.workflows.models import (
    OPEN_EXECUTIONS,
    Execution,
    StepState,
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
from shared.workflows.triggering import WorkflowTriggers
from shared.workflows.triggers import check_trigger
from shared.workflows.views import WorkflowViews

# An execution is one record (a DynamoDB item holds 400 KB): its definition, its start inputs
# and every step's output must fit. 64 KiB + 64 KiB + 50 steps x 4,000 characters
# (`engine.MAX_STEP_TEXT`) do.
MAX_DEFINITION_BYTES = 65_536
MAX_INPUTS_BYTES = 65_536


def new_workflow_id() -> str:
    """Creation time first (hex milliseconds), so ids sort newest-last in every store."""
    return f"wf_{int(time.time() * 1000):011x}{secrets.token_hex(6)}"


def new_execution_id() -> str:
    return "wfx_" + secrets.token_hex(10)


@dataclass(eq=False)
class WorkflowService:
    store: WorkflowStore
    tasks: StepTasks
    machines: StateMachines | None = None
    clock: Callable[[], float] = time.time
    schedules: Schedules | None = None
    events: DomainEvents = field(default_factory=DomainEvents)

    def __post_init__(self) -> None:
        self._engine = StepEngine(self.store, self.tasks, self.machines, self.clock, self.events)
        self._views = WorkflowViews(self.store, self.tasks)
        self._triggers = WorkflowTriggers(
            self.store,
            lambda team, workflow, inputs, by: self.start_workflow(
                team, workflow, inputs, started_by=by
            ),
            self.clock,
            self.schedules,
        )

    def on_end(self, listener: EndListener) -> None:
        """Call `listener(team, execution, workflow name)` once an execution ends.

        The knowledge group uses it to capture workflow completions as `workflow` events. A
        listener that raises is logged and skipped: the execution has ended regardless.
        """
        self._engine.on_end(listener)

    def _now(self) -> datetime:
        return datetime.fromtimestamp(self.clock(), tz=UTC)

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
                self.store.create(team, fresh)
                self._triggers.sync_schedule(team, fresh)
                return self._views.workflow(team, fresh)
            except NameTaken as taken:
                existing = taken.existing or self.store.find_by_name(team, fresh.name)
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
                self.store.replace(team, newer, existing.updated_at)
                self._triggers.sync_schedule(team, newer)
                return self._views.workflow(team, newer)
            except StaleWrite:
                continue
        raise Conflict(
            f"`name`: workflow {name!r} is being changed concurrently; retry", field="name"
        )

    def get(self, principal: Principal, workflow_id: str) -> WorkflowView | None:
        workflow = self.store.get(principal.team, workflow_id)
        if workflow is None:
            return None
        if workflow.current_execution_id:
            self._engine.check(principal.team, workflow.current_execution_id)
        return self._views.workflow(
            principal.team, self.store.get(principal.team, workflow_id) or workflow
        )

    def list_workflows(
        self, principal: Principal, *, status: WorkflowStatus | None, limit: int
    ) -> list[WorkflowView]:
        """The team's workflows, newest first; `status` is that of each newest execution."""
        found: list[WorkflowView] = []
        cursor: str | None = None
        while True:
            page = self.store.list_team(principal.team, limit=limit, cursor=cursor)
            for workflow in page.items:
                view = self._views.workflow(principal.team, workflow)
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
            current = self.store.get_execution(team, workflow.current_execution_id)
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
        if self.machines is not None:
            arn = workflow.state_machine_arn or self.machines.ensure(
                team, workflow, workflow.definition
            )
            workflow = workflow.model_copy(update={"state_machine_arn": arn})
        started = self.events.event(
            team, Kind.WORKFLOW_STARTED, started_by, **execution_fields(execution)
        )
        self.store.create_execution(team, execution, events=[started])
        updated = workflow.model_copy(
            update={
                "current_execution_id": execution.id,
                "updated_at": max(now, workflow.updated_at + timedelta(microseconds=1)),
            }
        )
        try:
            self.store.replace(team, updated, workflow.updated_at)
        except StaleWrite as exc:
            raise Conflict(
                f"`workflow_id`: workflow {workflow.id!r} changed while starting (another "
                "start or a new version); call workflow.status, then retry",
                field="workflow_id",
            ) from exc
        if self.machines is not None and updated.state_machine_arn:
            execution_arn, console = self.machines.start(updated.state_machine_arn, team, execution)
            self._engine.change(
                team,
                execution.id,
                lambda ex, fx: set_fields(ex, execution_arn=execution_arn, console_url=console),
            )
        else:
            self._engine.change(team, execution.id, self._engine.advance)
        return self._views.workflow(team, updated)

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
            self.store.get_execution(team, workflow.current_execution_id)
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

        def decide(ex: Execution, fx: Effects) -> bool:
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
                        self._engine.dispatch(ex, state, fx)
                self._engine.advance(ex, fx)
                return True
            self._engine.end(ex, fx, "cancelled", f"cancelled by {principal.actor}")
            return True

        self._engine.change(team, execution.id, decide)
        return self._views.workflow(team, self._workflow(team, workflow_id))

    # ------------------------------------------------------------------ triggers

    def event_published(
        self, team: str, event_type: str, payload: dict[str, Any], published_by: str
    ) -> list[str]:
        """Start every team workflow whose event trigger names `event_type` (the events seam);
        the ids of the workflows started (`WorkflowTriggers.event_published`)."""
        return self._triggers.event_published(team, event_type, payload, published_by)

    def scheduled_start(self, team: str, workflow_id: str) -> bool:
        """A schedule fired: start the workflow (`WorkflowTriggers.scheduled_start`)."""
        return self._triggers.scheduled_start(team, workflow_id)

    def run_due_schedules(self, team: str) -> list[str]:
        """Start the team's due schedules, embedded (`WorkflowTriggers.run_due_schedules`)."""
        return self._triggers.run_due_schedules(team)

    # ------------------------------------------------------------------ the step life cycle

    def step_ready(self, team: str, execution_id: str, step: str, task_token: str) -> None:
        """The state machine reached `step` (the dispatcher's call; `StepEngine.step_ready`)."""
        self._engine.step_ready(team, execution_id, step, task_token)

    def task_finished(self, team: str, task: Task) -> None:
        """A task was completed or failed (the orchestrator's finish hook;
        `StepEngine.task_finished`)."""
        self._engine.task_finished(team, task)

    def sweep(self, team: str | None = None) -> int:
        """Redo what a crash cut off and time out overdue steps (`StepEngine.sweep`)."""
        return self._engine.sweep(team)

    def _workflow(self, team: str, workflow_id: str) -> Workflow:
        workflow = self.store.get(team, workflow_id)
        if workflow is None:
            raise NotFound(
                f"`workflow_id`: no workflow with id {workflow_id!r} in your team; use an id "
                "from workflow.create or workflow.list",
                field="workflow_id",
            )
        return workflow


def _check_size(field: str, value: Any, limit: int) -> None:
    size = len(json.dumps(value, separators=(",", ":")).encode())
    if size > limit:
        raise InvalidArgument(
            f"`{field}` is {size} bytes as JSON; at most {limit} (pass large data as artifacts "
            "and refer to their ids)",
            field=field,
        )
