"""What the task service needs from storage.

The store enforces each transition's condition (the fence, the status, the lease) in the same
write that makes the change; when the condition does not hold it raises, carrying the task as it
was, so the caller learns who holds it without a second read. Whether a lease has run out is
decided from the moment the caller passes in: the store keeps no clock of its own.

`events` (create, claim, finish) are the change's domain events: written to the team's event
log in the same transaction as the change, so a refused transition writes none and a stored
one always has them (`shared.domain_events.adapters.outbox`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, Protocol

from shared.domain_events.models import DomainEvent
from shared.orchestrator.tasks.models import Task
from shared.storage.pages import Page

FinalStatus = Literal["completed", "failed"]


@dataclass(frozen=True)
class TaskFilter:
    """Which tasks a team listing keeps: every field given must match exactly."""

    status: str | None = None
    workflow_id: str | None = None
    claimed_by: str | None = None

    def matches(self, task: Task) -> bool:
        return (
            (self.status is None or task.status == self.status)
            and (self.workflow_id is None or task.workflow_id == self.workflow_id)
            and (self.claimed_by is None or task.claimed_by == self.claimed_by)
        )


@dataclass(frozen=True)
class TaskClaim:
    """`holder`'s claim at `at`: a lease until `lease_until`, if the fence is still
    `expected_fence`."""

    holder: str
    at: datetime
    lease_until: datetime
    expected_fence: int

    def changes(self) -> dict[str, Any]:
        """The fields a claim that holds sets (both adapters write these)."""
        return dict(
            status="claimed",
            claimed_by=self.holder,
            claimed_at=self.at,
            lease_expires_at=self.lease_until,
            fence=self.expected_fence + 1,
            updated_at=self.at,
        )


@dataclass(frozen=True)
class TaskFinish:
    """`holder` closing its claim at `fence` with `status` and the `outcome` fields, at `at`."""

    holder: str
    fence: int
    status: FinalStatus
    outcome: dict[str, Any]
    at: datetime

    def changes(self) -> dict[str, Any]:
        """The fields a finish that holds sets: `None` values in `outcome` are not stored."""
        changes = {k: v for k, v in self.outcome.items() if v is not None}
        changes.update(status=self.status, finished_at=self.at, updated_at=self.at)
        return changes


class TaskStore(Protocol):
    """Tasks of one team at a time; every transition is one conditional write."""

    def create(self, team: str, task: Task, *, events: Sequence[DomainEvent] = ()) -> None:
        """Insert a new task (ids are random: an existing id is a bug, never overwritten)."""
        ...

    def get(self, team: str, task_id: str) -> Task | None: ...

    def claim(
        self, team: str, task_id: str, claim: TaskClaim, *, events: Sequence[DomainEvent] = ()
    ) -> Task:
        """Give the claim's holder a lease on the task and add one to its fence.

        Holds when the fence is still `expected_fence` and the task is pending, or claimed or
        running under a lease that ran out by the claim's `at` (whole seconds).
        `ClaimLost(current)` otherwise (`current` is None when there is no such task).
        """
        ...

    def start(
        self, team: str, task_id: str, holder: str, started_at: datetime, lease_until: datetime
    ) -> Task:
        """Mark `holder`'s claimed task running and renew its lease to `lease_until`.

        Needs `holder`'s claim, status claimed, and a lease still live at `started_at`;
        `ClaimNotHeld(current)` otherwise.
        """
        ...

    def finish(
        self, team: str, task_id: str, finish: TaskFinish, *, events: Sequence[DomainEvent] = ()
    ) -> Task:
        """Close the holder's claimed or running task with the finish's status and outcome.

        Needs the holder's claim at `fence` (a stale holder whose lease was taken over is
        refused); `ClaimNotHeld(current)` otherwise.
        """
        ...

    def cancel(self, team: str, task_id: str, reason: str | None, at: datetime) -> Task:
        """Close an open task as cancelled; `AlreadyClosed(current)` when it is not open."""
        ...

    def list_open(self, team: str) -> Iterator[Task]:
        """The team's open tasks (pending, claimed, running), highest priority first, then
        oldest (then by id). Read lazily: a caller that stops early reads no further."""
        ...

    def claims_held(self, team: str, holder: str, now: datetime) -> list[Task]:
        """The claimed or running tasks whose lease `holder` holds at `now`, in queue order."""
        ...

    def count_claims_held(self, team: str, holder: str, now: datetime) -> int:
        """How many tasks `claims_held` would return, without reading the records (the
        capacity check runs on every claim)."""
        ...

    def list_team(
        self, team: str, wanted: TaskFilter, *, limit: int, cursor: str | None = None
    ) -> Page[Task]:
        """The team's tasks matching `wanted`, newest first (then by id)."""
        ...


class TaskConflict(Exception):
    """A transition's condition did not hold; `current` is the task as it was (None: no task)."""

    def __init__(self, current: Task | None) -> None:
        super().__init__(type(self).__name__)
        self.current = current


class ClaimLost(TaskConflict):
    """The task is not claimable: held under a live lease, closed, or claimed since it was read."""


class ClaimNotHeld(TaskConflict):
    """The caller does not hold the claim the transition needs (or its lease ran out)."""


class AlreadyClosed(TaskConflict):
    """The task is completed, failed or cancelled already."""
