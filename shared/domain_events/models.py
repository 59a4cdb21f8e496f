"""The domain event schema: `source` "cairn", one `detail-type` per kind, a versioned detail.

Every detail carries `version`, `id` (unique per event: consumers de-duplicate on it), `team`,
`time` (ISO 8601, UTC), `actor` (the agent, or `token:<id>`, whose call caused it; `curator` for
what the curator finds) and the kind's own fields below: ids, statuses, counts and amounts
only. Never a secret, never a memory's, handoff's or task's text (titles, content, outputs and
error messages stay out: a rule's target may be a Slack channel).
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from datetime import datetime
from enum import StrEnum
from typing import Final

from pydantic import BaseModel, ConfigDict, Field, field_validator

SOURCE: Final = "cairn"
SCHEMA_VERSION: Final = "1"
# event.publish refuses event types under this prefix: in the log they are cairn's own.
RESERVED_PREFIX: Final = "cairn."


class Kind(StrEnum):
    """Each kind's value is its `event_type` in the team's event log (what `event.poll`
    filters on); `DETAIL_TYPES` gives its EventBridge `detail-type`."""

    HANDOFF_STORED = "cairn.handoff.stored"
    HANDOFF_CLAIMED = "cairn.handoff.claimed"
    TASK_CREATED = "cairn.task.created"
    TASK_CLAIMED = "cairn.task.claimed"
    TASK_COMPLETED = "cairn.task.completed"
    TASK_FAILED = "cairn.task.failed"
    TASK_REQUEUED = "cairn.task.requeued"
    WORKFLOW_STARTED = "cairn.workflow.started"
    WORKFLOW_SUCCEEDED = "cairn.workflow.succeeded"
    WORKFLOW_FAILED = "cairn.workflow.failed"
    WORKFLOW_CANCELLED = "cairn.workflow.cancelled"
    MEMORY_CONFLICT_DETECTED = "cairn.memory.conflict_detected"
    MEMORY_PROPOSAL_AWAITING_REVIEW = "cairn.memory.proposal_awaiting_review"
    BUDGET_EXCEEDED = "cairn.budget.exceeded"


DETAIL_TYPES: Final[dict[Kind, str]] = {
    Kind.HANDOFF_STORED: "Handoff Stored",
    Kind.HANDOFF_CLAIMED: "Handoff Claimed",
    Kind.TASK_CREATED: "Task Created",
    Kind.TASK_CLAIMED: "Task Claimed",
    Kind.TASK_COMPLETED: "Task Completed",
    Kind.TASK_FAILED: "Task Failed",
    Kind.TASK_REQUEUED: "Task Requeued",
    Kind.WORKFLOW_STARTED: "Workflow Execution Started",
    Kind.WORKFLOW_SUCCEEDED: "Workflow Execution Succeeded",
    Kind.WORKFLOW_FAILED: "Workflow Execution Failed",
    Kind.WORKFLOW_CANCELLED: "Workflow Execution Cancelled",
    Kind.MEMORY_CONFLICT_DETECTED: "Memory Conflict Detected",
    Kind.MEMORY_PROPOSAL_AWAITING_REVIEW: "Memory Proposal Awaiting Review",
    Kind.BUDGET_EXCEEDED: "Budget Exceeded",
}

# The detail's common keys: a kind's own fields may not reuse them.
ENVELOPE: Final = frozenset({"version", "id", "team", "time", "actor"})
# A field value: ids, statuses, counts, amounts, or a list of ids.
FieldValue = str | int | float | bool | list[str] | None


def new_event_id() -> str:
    """The same shape as event.publish's ids: the log keeps both side by side."""
    return f"evt-{secrets.token_hex(12)}"


class DomainEvent(BaseModel):
    """One domain event: `detail()` is what EventBridge and `event.poll` carry."""

    model_config = ConfigDict(frozen=True)

    kind: Kind
    id: str = Field(default_factory=new_event_id)
    team: str
    time: datetime
    actor: str
    fields: dict[str, FieldValue] = Field(default_factory=dict)

    @field_validator("fields")
    @classmethod
    def _not_the_envelope(cls, value: dict[str, FieldValue]) -> dict[str, FieldValue]:
        if clash := sorted(ENVELOPE & set(value)):
            raise ValueError(f"fields {clash} would replace the detail's envelope")
        return value

    @property
    def detail_type(self) -> str:
        return DETAIL_TYPES[self.kind]

    def detail(self) -> dict[str, FieldValue]:
        """The versioned detail: the common envelope, then the kind's fields, e.g.
        `{"version": "1", "id": "evt-…", "team": "acme", "time": "2026-…+00:00",
        "actor": "builder", "task_id": "tsk_…", "fence": 1}`."""
        return {
            "version": SCHEMA_VERSION,
            "id": self.id,
            "team": self.team,
            "time": self.time.isoformat(),
            "actor": self.actor,
            **self.fields,
        }

    @classmethod
    def from_detail(cls, kind: Kind, detail: dict[str, FieldValue]) -> DomainEvent:
        """The event back from its detail (the publisher reads the log's items)."""
        return cls(
            kind=kind,
            id=str(detail["id"]),
            team=str(detail["team"]),
            time=datetime.fromisoformat(str(detail["time"])),
            actor=str(detail["actor"]),
            fields={k: v for k, v in detail.items() if k not in ENVELOPE},
        )


def check_one_team(team: str, events: Sequence[DomainEvent]) -> None:
    """A change's events belong to the change's team: `ValueError` naming any other."""
    if strays := sorted({event.team for event in events} - {team}):
        raise ValueError(f"events of team(s) {strays} with a change of team {team!r}")
