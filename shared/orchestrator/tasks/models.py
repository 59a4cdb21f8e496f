"""Tasks (seed 000's task.* tools): inputs, outputs and the record."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from shared.model_fields import optional_text
from shared.tools.inputs import SeedToolInput

TaskStatus = Literal["pending", "claimed", "running", "completed", "failed", "cancelled"]
OPEN_STATUSES: frozenset[str] = frozenset({"pending", "claimed", "running"})
MAX_TEXT = 10_000


_Input = SeedToolInput


class TaskCreateInput(_Input):
    name: str = Field(min_length=1, max_length=300, description="Task name.")
    description: str | None = Field(default=None, max_length=MAX_TEXT)
    requires_capability: str | None = optional_text(
        128, "Only agents registered with this capability may claim the task."
    )
    priority: int = Field(default=0, ge=-1000, le=1000, description="Higher runs first.")
    input_data: dict[str, Any] = Field(default_factory=dict)
    input_artifact_ids: list[str] = Field(default_factory=list, max_length=100)
    workflow_id: str | None = Field(default=None, min_length=1, max_length=128)
    workflow_step_id: str | None = Field(default=None, min_length=1, max_length=128)
    depends_on: list[dict[str, Any]] = Field(
        default_factory=list,
        max_length=50,
        description='Tasks that must complete first: [{"task_id": "tsk_..."}].',
    )

    @field_validator("depends_on")
    @classmethod
    def _each_names_a_task(cls, value: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for item in value:
            task_id = item.get("task_id")
            if not isinstance(task_id, str) or not 0 < len(task_id) <= 64:
                raise ValueError('each entry must be an object with a "task_id" string of 1-64')
        return value


class TaskPollInput(_Input):
    limit: int = Field(default=10, ge=1, le=50, description="Maximum tasks to return.")


class TaskIdInput(_Input):
    task_id: str = Field(min_length=1, max_length=64)


class TaskCompleteInput(TaskIdInput):
    output_summary: str | None = Field(default=None, max_length=MAX_TEXT)
    output_artifact_id: str | None = Field(default=None, min_length=1, max_length=64)
    tokens_input: int | None = Field(default=None, ge=0)
    tokens_output: int | None = Field(default=None, ge=0)
    estimated_cost_usd: float | None = Field(default=None, ge=0)
    model_used: str | None = Field(default=None, min_length=1, max_length=128)


class TaskFailInput(TaskIdInput):
    error_message: str | None = Field(default=None, max_length=MAX_TEXT)


class TaskCancelInput(TaskIdInput):
    reason: str | None = Field(default=None, max_length=MAX_TEXT)


class TaskDelegateInput(_Input):
    parent_task_id: str = Field(min_length=1, max_length=64)
    name: str = Field(min_length=1, max_length=300)
    description: str | None = Field(default=None, max_length=MAX_TEXT)


class TaskListInput(_Input):
    status: TaskStatus | None = None
    workflow_id: str | None = Field(default=None, min_length=1)
    agent_id: str | None = Field(default=None, min_length=1, description="Tasks claimed by it.")
    limit: int = Field(default=20, ge=1, le=100)


class Task(BaseModel):
    """A task record. A claim is a lease: `lease_expires_at`, and `fence` counts claims."""

    id: str
    name: str
    description: str | None = None
    requires_capability: str | None = None
    priority: int = 0
    input_data: dict[str, Any] = Field(default_factory=dict)
    input_artifact_ids: list[str] = Field(default_factory=list)
    workflow_id: str | None = None
    workflow_step_id: str | None = None
    depends_on: list[dict[str, Any]] = Field(default_factory=list)
    parent_task_id: str | None = None
    status: TaskStatus = "pending"
    created_by: str
    created_at: datetime
    updated_at: datetime
    claimed_by: str | None = None
    claimed_at: datetime | None = None
    lease_expires_at: datetime | None = None
    fence: int = 0
    started_at: datetime | None = None
    finished_at: datetime | None = None
    output_summary: str | None = None
    output_artifact_id: str | None = None
    tokens_input: int | None = None
    tokens_output: int | None = None
    estimated_cost_usd: float | None = None
    model_used: str | None = None
    error_message: str | None = None
    cancel_reason: str | None = None

    def lease_expired(self, now: datetime) -> bool:
        return self.lease_expires_at is not None and self.lease_expires_at <= now

    def claimable(self, now: datetime) -> bool:
        """Pending, or claimed/running under a lease that has run out (the reaper's rule)."""
        return self.status == "pending" or (
            self.status in ("claimed", "running") and self.lease_expired(now)
        )


class TaskOutput(BaseModel):
    task: Task | None


class TaskListOutput(BaseModel):
    tasks: list[Task]


class SuccessOutput(BaseModel):
    success: Literal[True] = True
