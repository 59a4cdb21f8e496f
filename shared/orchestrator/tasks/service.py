"""The task service: create, poll, claim (a lease), start, complete, fail, cancel, delegate.

Every transition is one conditional write on the task (the `TaskStore` enforces its condition):
- **claim** succeeds when the task is pending, or claimed/running under an expired lease (a dead
  agent's task returns to the pool when it is next claimed — expiry is decided at read time),
  sets a `LEASE_SECONDS` lease and adds one to `fence`;
- **start** needs the caller's live claim and extends the lease;
- **complete** / **fail** need the caller's claim, checked in the same write as the fence read
  with it: if the lease ran out and another agent claimed the task since, the stale holder is
  refused. (The seed's tools carry no fence argument, so two workers sharing one agent
  identity are one holder to cairn.)
- **cancel** closes any open task.
"""

from __future__ import annotations

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
from shared.orchestrator.ports import ActiveAgent, AgentDirectory
from shared.orchestrator.tasks.models import (
    OPEN_STATUSES,
    Task,
    TaskDelegateInput,
    TaskListInput,
)
from shared.orchestrator.tasks.ports import (
    AlreadyClosed,
    ClaimLost,
    ClaimNotHeld,
    FinalStatus,
    TaskClaim,
    TaskFilter,
    TaskFinish,
    TaskStore,
)
from shared.tools.errors import Conflict, InvalidArgument, NotFound

LEASE_SECONDS = 900
logger = logging.getLogger("cairn.tasks")
# Called with (team, the finished task) after each task.complete / task.fail.
FinishListener = Callable[[str, Task], None]


def task_fields(task: Task) -> dict[str, str | None]:
    """What a task's domain events carry: ids and status, never its text."""
    return {
        "task_id": task.id,
        "status": task.status,
        "workflow_id": task.workflow_id,
        "workflow_step_id": task.workflow_step_id,
        "parent_task_id": task.parent_task_id,
        "requires_capability": task.requires_capability,
    }


def new_task_id() -> str:
    return "tsk_" + secrets.token_hex(12)


@dataclass(eq=False)
class TaskService:
    store: TaskStore
    agents: AgentDirectory
    clock: Callable[[], float] = time.time
    events: DomainEvents = field(default_factory=DomainEvents)
    _finish_listeners: list[FinishListener] = field(default_factory=list, init=False)

    def on_finish(self, listener: FinishListener) -> None:
        """The workflow seam: call `listener(team, task)` once a task is completed or failed.

        The workflow service uses it to resume the execution waiting on that task's step. A
        listener's failure is logged, not raised: the task's outcome is already stored, and
        the workflow sweep applies it later.
        """
        self._finish_listeners.append(listener)

    def _now(self) -> datetime:
        return datetime.fromtimestamp(self.clock(), tz=UTC)

    # ------------------------------------------------------------------ create

    def create(self, principal: Principal, **fields: Any) -> Task:
        """A new pending task; every `depends_on` task must exist in the team."""
        team = principal.team
        missing = [
            d["task_id"]
            for d in fields.get("depends_on", [])
            if not self.store.get(team, d["task_id"])
        ]
        if missing:
            raise InvalidArgument(
                f"`depends_on` names task(s) not in your team: {', '.join(missing)}; use ids "
                "from task.create or task.list",
                field="depends_on",
            )
        now = self._now()
        task = Task(
            id=new_task_id(),
            created_by=principal.actor,
            created_at=now,
            updated_at=now,
            **fields,
        )
        created = self.events.event(team, Kind.TASK_CREATED, principal.actor, **task_fields(task))
        self.store.create(team, task, events=[created])
        return task

    def delegate(self, principal: Principal, asked: TaskDelegateInput) -> Task:
        """A sub-task of `parent_task_id`, in the parent's workflow."""
        parent = self.store.get(principal.team, asked.parent_task_id)
        if parent is None:
            raise _no_task(asked.parent_task_id, "parent_task_id")
        return self.create(
            principal,
            name=asked.name,
            description=asked.description,
            parent_task_id=parent.id,
            workflow_id=parent.workflow_id,
        )

    # ------------------------------------------------------------------ reads

    def get(self, principal: Principal, task_id: str) -> Task | None:
        return self.store.get(principal.team, task_id)

    def list_tasks(self, principal: Principal, asked: TaskListInput) -> list[Task]:
        """The team's tasks matching every filter, newest first."""
        wanted = TaskFilter(
            status=asked.status, workflow_id=asked.workflow_id, claimed_by=asked.agent_id
        )
        return self.store.list_team(principal.team, wanted, limit=asked.limit).items

    def poll(self, principal: Principal, *, limit: int) -> list[Task]:
        """Tasks the caller could claim now: claimable, its capability held, dependencies done."""
        team, now = principal.team, self._now()
        held = self._capabilities(self._agent(principal))
        found: list[Task] = []
        for task in self.store.list_open(team):
            if (
                task.claimable(now)
                and (task.requires_capability is None or task.requires_capability in held)
                and not self._waiting_on(team, task)
            ):
                found.append(task)
                if len(found) == limit:
                    break
        return found

    # ------------------------------------------------------------------ transitions

    def claim(self, principal: Principal, task_id: str) -> Task:
        team, now = principal.team, self._now()
        task = self.store.get(team, task_id)
        if task is None:
            raise _no_task(task_id)
        agent = self._agent(principal)  # read once: for the capability and the task limit
        if task.requires_capability is not None and task.requires_capability not in (
            self._capabilities(agent)
        ):
            raise InvalidArgument(
                f"`task_id`: task {task_id!r} requires capability "
                f"{task.requires_capability!r}, which the calling agent is not registered with; "
                "add it with agent.capabilities, or take a task task.poll offers you",
                field="task_id",
            )
        if waiting := self._waiting_on(team, task):
            raise Conflict(
                f"`task_id`: task {task_id!r} waits on unfinished task(s): "
                f"{', '.join(waiting)}; claim it once they are completed",
                field="task_id",
                holder={"waiting_on": waiting},
            )
        self._check_capacity(principal, agent, now)
        expires = now + timedelta(seconds=LEASE_SECONDS)
        # The events are written with the claim, in its transaction: the store's condition
        # (this fence, and the task pending or its lease run out) is what they describe.
        events = []
        if task.status != "pending":
            # The claim takes over a lease that ran out: expiry is decided when the task is
            # next claimed (there is no reaper), so the requeue is recorded with that claim,
            # just before it.
            events.append(
                self.events.event(
                    team,
                    Kind.TASK_REQUEUED,
                    principal.actor,
                    **task_fields(task),
                    previous_holder=task.claimed_by,
                )
            )
        events.append(
            self.events.event(
                team,
                Kind.TASK_CLAIMED,
                principal.actor,
                **task_fields(task.model_copy(update={"status": "claimed"})),
                fence=task.fence + 1,
            )
        )
        try:
            claimed = self.store.claim(
                team, task_id, TaskClaim(principal.actor, now, expires, task.fence), events=events
            )
        except ClaimLost as lost:
            raise self._claim_lost(task_id, lost.current) from lost
        return claimed

    def start(self, principal: Principal, task_id: str) -> None:
        now = self._now()
        expires = now + timedelta(seconds=LEASE_SECONDS)
        try:
            self.store.start(principal.team, task_id, principal.actor, now, expires)
        except ClaimNotHeld as lost:
            raise self._not_yours(task_id, principal, lost.current, "start") from lost

    def finish(
        self, principal: Principal, task_id: str, status: FinalStatus, outcome: dict[str, Any]
    ) -> None:
        """Complete or fail the caller's task, fenced by the claim it holds."""
        team = principal.team
        task = self.store.get(team, task_id)
        if task is None:
            raise _no_task(task_id)
        event = self.events.event(
            team,
            Kind.TASK_COMPLETED if status == "completed" else Kind.TASK_FAILED,
            principal.actor,
            **task_fields(task.model_copy(update={"status": status})),
        )
        try:
            finished = self.store.finish(
                team,
                task_id,
                TaskFinish(principal.actor, task.fence, status, outcome, self._now()),
                events=[event],
            )
        except ClaimNotHeld as lost:
            raise self._not_yours(task_id, principal, lost.current, _VERB[status]) from lost
        for listener in self._finish_listeners:
            try:
                listener(team, finished)
            except Exception:
                logger.exception("a task finish listener failed", extra={"task_id": task_id})

    def cancel(self, principal: Principal, task_id: str, reason: str | None) -> None:
        try:
            self.store.cancel(principal.team, task_id, reason, self._now())
        except AlreadyClosed as lost:
            if lost.current is None:
                raise _no_task(task_id) from lost
            raise Conflict(
                f"`task_id`: task {task_id!r} is already {lost.current.status}; there is "
                "nothing left to cancel",
                field="task_id",
            ) from lost

    # ------------------------------------------------------------------ helpers

    def _agent(self, principal: Principal) -> ActiveAgent | None:
        """The caller as a registered, active agent; None for a token of no such agent."""
        if principal.agent_id is None:
            return None
        return self.agents.active_agent(principal.team, principal.agent_id)

    @staticmethod
    def _capabilities(agent: ActiveAgent | None) -> frozenset[str]:
        return agent.capabilities if agent is not None else frozenset()

    def _check_capacity(
        self, principal: Principal, agent: ActiveAgent | None, now: datetime
    ) -> None:
        """A registered agent (`agent`, the caller) holds at most its `max_concurrent_tasks`
        live claims.

        Counted from the store's live claims just before the claim: two claims racing each other
        can overshoot by one each, so the limit is a guard, not a guarantee.
        """
        limit = agent.max_concurrent_tasks if agent is not None else None
        if limit is None:
            return
        # Counted on every claim; the held tasks are read only to name them in a refusal.
        if self.store.count_claims_held(principal.team, principal.actor, now) < limit:
            return
        held = [t.id for t in self.store.claims_held(principal.team, principal.actor, now)]
        if len(held) >= limit:
            raise Conflict(
                f"`task_id`: the calling agent already holds {len(held)} task(s), its "
                f"max_concurrent_tasks ({limit}); complete or fail one first",
                field="task_id",
                holder={"held": held},
            )

    def _waiting_on(self, team: str, task: Task) -> list[str]:
        waiting = []
        for dependency in task.depends_on:
            other = self.store.get(team, dependency["task_id"])
            if other is None or other.status != "completed":
                waiting.append(dependency["task_id"])
        return waiting

    def _claim_lost(self, task_id: str, current: Task | None) -> Exception:
        if current is None:
            return _no_task(task_id)
        if current.status not in OPEN_STATUSES:
            return Conflict(
                f"`task_id`: task {task_id!r} is {current.status}; take an open task from "
                "task.poll",
                field="task_id",
            )
        return Conflict(
            f"`task_id`: task {task_id!r} is claimed by {current.claimed_by} until "
            f"{current.lease_expires_at.isoformat() if current.lease_expires_at else '?'}; "
            "take another task from task.poll, or retry after the lease expires",
            field="task_id",
            holder={
                "claimed_by": current.claimed_by,
                "claimed_at": current.claimed_at.isoformat() if current.claimed_at else None,
                "lease_expires_at": (
                    current.lease_expires_at.isoformat() if current.lease_expires_at else None
                ),
            },
        )

    def _not_yours(
        self, task_id: str, principal: Principal, current: Task | None, action: str
    ) -> Exception:
        """Why the caller may not `action` ("start", "complete", "fail") the task."""
        if current is None:
            return _no_task(task_id)
        if current.claimed_by != principal.actor:
            return Conflict(
                f"`task_id`: cannot {action} task {task_id!r}: it is not claimed by you "
                f"(status {current.status}, claimed by {current.claimed_by}); claim it first "
                "with task.claim",
                field="task_id",
                holder={"claimed_by": current.claimed_by},
            )
        return Conflict(
            f"`task_id`: cannot {action} task {task_id!r}: status is {current.status}"
            + (" and its lease has expired" if action == "start" else "")
            + "; task.get shows its state, task.claim claims it again if it is open",
            field="task_id",
        )


# The verb of each final status, for messages ("cannot complete task …", not "cannot completed").
_VERB: dict[FinalStatus, str] = {"completed": "complete", "failed": "fail"}


def _no_task(task_id: str, field: str = "task_id") -> NotFound:
    return NotFound(
        f"`{field}`: no task with id {task_id!r} in your team; use an id from task.create, "
        "task.poll or task.list",
        field=field,
    )
