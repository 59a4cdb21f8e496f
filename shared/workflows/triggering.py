"""What starts a workflow besides workflow.start: an event of the type its trigger names
(`event_published`), and its schedule — an EventBridge schedule in AWS (`scheduled_start`,
kept in step by `sync_schedule`), or `run_due_schedules` in the embedded default."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from shared.tools.errors import Conflict
from shared.workflows.cron import CronError, next_fire
from shared.workflows.models import Workflow
from shared.workflows.ports import Schedules, WorkflowStore
from shared.workflows.triggers import RATE

logger = logging.getLogger("cairn.workflows")
# Starts `workflow` for `team` with `inputs`, started by the last argument; `Conflict` while an
# execution of it is open (`WorkflowService.start_workflow`).
Start = Callable[[str, Workflow, dict[str, Any], str], object]


@dataclass(frozen=True)
class WorkflowTriggers:
    store: WorkflowStore
    start: Start
    clock: Callable[[], float]
    schedules: Schedules | None = None

    def _now(self) -> datetime:
        return datetime.fromtimestamp(self.clock(), tz=UTC)

    def _team_workflows(self, team: str) -> list[Workflow]:
        found: list[Workflow] = []
        cursor: str | None = None
        while True:
            page = self.store.list_team(team, limit=100, cursor=cursor)
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
                self.start(team, workflow, dict(payload), published_by)
            except Conflict:
                logger.info(
                    "event trigger skipped: an execution is open", extra={"id": workflow.id}
                )
                continue
            started.append(workflow.id)
        return started

    def sync_schedule(self, team: str, workflow: Workflow) -> None:
        """AWS: the workflow's EventBridge schedule follows its newest trigger."""
        if self.schedules is None:
            return
        if workflow.trigger_type == "schedule":
            self.schedules.put(team, workflow)
        else:
            self.schedules.remove(team, workflow.id)

    def scheduled_start(self, team: str, workflow_id: str) -> bool:
        """A schedule fired: start the workflow with its trigger's inputs. False when it is no
        longer schedule-triggered (a newer version) or an execution is still open."""
        workflow = self.store.get(team, workflow_id)
        if workflow is None or workflow.trigger_type != "schedule":
            return False
        inputs = workflow.trigger_config.get("inputs") or {}
        try:
            self.start(team, workflow, dict(inputs), "schedule")
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
                current = self.store.get_execution(team, workflow.current_execution_id)
                if current is not None:
                    since = current.started_at
            if not _schedule_due(workflow, since, now):
                continue
            inputs = workflow.trigger_config.get("inputs") or {}
            try:
                self.start(team, workflow, dict(inputs), "schedule")
            except Conflict:
                continue
            started.append(workflow.id)
        return started


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
