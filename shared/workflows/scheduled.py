"""A schedule trigger firing: EventBridge Scheduler invokes the workflows function with
`{"workflow_schedule": {"team": ..., "workflow_id": ...}}` (see `adapters.scheduler`)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from shared.workflows.service import WorkflowService


class ScheduleFiring(BaseModel):
    team: str = Field(min_length=1)
    workflow_id: str = Field(min_length=1)


def is_schedule_firing(event: dict[str, Any]) -> bool:
    return isinstance(event.get("workflow_schedule"), dict)


def fire(service: WorkflowService, event: dict[str, Any]) -> dict[str, Any]:
    """Start the workflow the schedule names; `{"started": bool}` (false while one runs)."""
    firing = ScheduleFiring.model_validate(event["workflow_schedule"])
    return {"started": service.scheduled_start(firing.team, firing.workflow_id)}
