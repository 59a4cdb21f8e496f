"""Seed 000's event.publish and event.poll on the orchestrator group."""

from __future__ import annotations

from shared.orchestrator.events.models import (
    EventPollInput,
    EventPollOutput,
    EventPublishInput,
    EventPublishOutput,
)
from shared.orchestrator.group import GROUP
from shared.orchestrator.service import Orchestrator
from shared.tools.registry import APPEND, READ_ONLY, ToolContext


@GROUP.tool(
    name="event.publish",
    title="Publish an event",
    description="Publish an event to the team's event log (kept 7 days); returns its event_id.",
    scopes=("event.write",),
    # Each call appends a new event.
    annotations=APPEND,
)
def event_publish(ctx: ToolContext[Orchestrator], args: EventPublishInput) -> EventPublishOutput:
    event_id = ctx.service.events.publish(ctx.principal, args.event_type, args.payload)
    return EventPublishOutput(event_id=event_id)


@GROUP.tool(
    name="event.poll",
    title="Poll events",
    description="Poll events since timestamp: the team's events published after `since` "
    "(default: the last 7 days), oldest first, optionally of one event_type.",
    scopes=("event.read",),
    annotations=READ_ONLY,
)
def event_poll(ctx: ToolContext[Orchestrator], args: EventPollInput) -> EventPollOutput:
    events = ctx.service.events.poll(ctx.principal, args)
    return EventPollOutput(
        events=events, next_since=events[-1].published_at if events else args.since
    )
