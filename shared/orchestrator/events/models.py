"""Events (seed 000's event.publish / event.poll): a team's time-ordered event log."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from shared.domain_events.log import Event
from shared.tools.inputs import SeedToolInput

__all__ = ["Event", "EventPollInput", "EventPollOutput", "EventPublishInput", "EventPublishOutput"]

_Input = SeedToolInput


class EventPublishInput(_Input):
    event_type: str = Field(
        min_length=1,
        max_length=128,
        pattern=r"^[A-Za-z0-9_.:/-]+$",
        description="Event type, e.g. task.completed or deploy:finished.",
    )
    payload: dict[str, Any] = Field(description="Event payload (JSON object, at most 64 KB).")


class EventPollInput(_Input):
    since: datetime | None = Field(
        default=None,
        description="Only events published strictly after this ISO 8601 timestamp; pass the "
        "previous answer's next_since to continue.",
    )
    event_type: str | None = Field(default=None, min_length=1, max_length=128)
    limit: int = Field(default=100, ge=1, le=500)


class EventPublishOutput(BaseModel):
    event_id: str


class EventPollOutput(BaseModel):
    """Oldest first. `next_since` is the last event's time: pass it as `since` to continue."""

    events: list[Event]
    next_since: datetime | None
