"""Per-team sync schedules on EventBridge Scheduler, and the runner they start.

A schedule lives in the stack's sync schedule group, is named after its team (`sync-<team>`),
starts the sync-runner function under the scheduler role, and carries its team in its input:
`{"team": "<team>", "schedule": "sync-<team>"}`. The runner checks both before it syncs
anything (`ScheduledSync.checked`), so a schedule can only ever sync the team it names.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from botocore.exceptions import ClientError
from pydantic import BaseModel, ConfigDict, Field

from shared.sync.models import SyncScheduleView

if TYPE_CHECKING:
    from mypy_boto3_scheduler import EventBridgeSchedulerClient

SCHEDULE_PREFIX: Final = "sync-"
# Scheduler's name limit is 64; a longer team keeps a readable head and a hash of the whole.
_NAME_LIMIT: Final = 64
_EVERY = re.compile(r"^(\d+)\s*(m|min|minutes?|h|hours?|d|days?)$")
_UNITS: Final = {"m": "minutes", "h": "hours", "d": "days"}
MIN_EVERY_MINUTES: Final = 5
TEAM_PATTERN: Final = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"


class ScheduleError(ValueError):
    """A schedule request that cannot be honoured; the message names the option and the fix."""


def schedule_name(team: str) -> str:
    """`sync-<team>`, or `sync-<head>-<hash>` for a team too long for Scheduler's 64."""
    name = SCHEDULE_PREFIX + team
    if len(name) <= _NAME_LIMIT:
        return name
    digest = hashlib.sha256(team.encode()).hexdigest()[:12]
    return f"{SCHEDULE_PREFIX}{team[: _NAME_LIMIT - len(SCHEDULE_PREFIX) - 13]}-{digest}"


def expression(*, every: str | None = None, cron: str | None = None) -> str:
    """Scheduler's expression for `--every 15m` or `--cron '0 * * * ? *'` (exactly one).

    >>> expression(every="15m"), expression(every="2h"), expression(cron="0 6 * * ? *")
    ('rate(15 minutes)', 'rate(2 hours)', 'cron(0 6 * * ? *)')
    """
    if (every is None) == (cron is None):
        raise ScheduleError("give exactly one of --every (e.g. 15m, 1h) or --cron")
    if cron is not None:
        fields = cron.split()
        if len(fields) != 6:
            raise ScheduleError(
                f"--cron takes Scheduler's six fields (minutes hours day-of-month month "
                f"day-of-week year), e.g. '0 6 * * ? *'; got {cron!r}"
            )
        return f"cron({' '.join(fields)})"
    assert every is not None
    match = _EVERY.match(every.strip().lower())
    if match is None:
        raise ScheduleError(f"--every takes a number and a unit (15m, 2h, 1d); got {every!r}")
    count, unit = int(match.group(1)), _UNITS[match.group(2)[0]]
    minutes = count * {"minutes": 1, "hours": 60, "days": 1440}[unit]
    if minutes < MIN_EVERY_MINUTES:
        raise ScheduleError(f"--every must be at least {MIN_EVERY_MINUTES}m (got {every!r})")
    return f"rate({count} {unit if count != 1 else unit[:-1]})"


_RATE = re.compile(r"^rate\((\d+) (minute|minutes|hour|hours|day|days)\)$")


def rate_seconds(schedule_expression: str) -> int | None:
    """The period of `rate(n unit)` in seconds; None for a `cron(...)`.

    >>> rate_seconds("rate(15 minutes)"), rate_seconds("cron(0 6 * * ? *)")
    (900, None)
    """
    match = _RATE.match(schedule_expression)
    if match is None:
        return None
    return int(match.group(1)) * {"m": 60, "h": 3600, "d": 86400}[match.group(2)[0]]


class ScheduledSync(BaseModel):
    """What a schedule hands the runner."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    team: str = Field(min_length=1, max_length=64, pattern=TEAM_PATTERN)
    schedule: str

    def checked(self, team_exists: Callable[[str], bool]) -> str:
        """The team to sync, once the event is proven to be its own schedule's."""
        if self.schedule != schedule_name(self.team):
            raise ScheduleError(
                f"schedule {self.schedule!r} may not sync team {self.team!r} "
                f"(its schedule is {schedule_name(self.team)!r})"
            )
        if not team_exists(self.team):
            raise ScheduleError(f"team {self.team!r} has no tokens: nothing to sync for it")
        return self.team


@dataclass(frozen=True)
class ScheduleTarget:
    """Where the stack's schedules point: its group, the runner and the role that invokes it."""

    group: str
    runner_arn: str
    role_arn: str


class SyncSchedules:
    """Create, list and delete the per-team schedules of one stack."""

    def __init__(self, client: EventBridgeSchedulerClient, target: ScheduleTarget) -> None:
        self._client = client
        self._target = target

    def put(self, team: str, schedule_expression: str) -> SyncScheduleView:
        """Create or replace `team`'s schedule."""
        name = schedule_name(team)
        arguments: dict[str, Any] = {
            "Name": name,
            "GroupName": self._target.group,
            "ScheduleExpression": schedule_expression,
            "FlexibleTimeWindow": {"Mode": "FLEXIBLE", "MaximumWindowInMinutes": 5},
            "Target": {
                "Arn": self._target.runner_arn,
                "RoleArn": self._target.role_arn,
                "Input": json.dumps({"team": team, "schedule": name}),
                # A missed sync is caught up by the next one: no retry storm.
                "RetryPolicy": {"MaximumRetryAttempts": 0},
            },
            "State": "ENABLED",
            "Description": f"cairn: sync team {team}",
        }
        if self._detail(name) is not None:
            self._client.update_schedule(**arguments)
        else:
            self._client.create_schedule(**arguments)
        return SyncScheduleView(team=team, schedule=name, expression=schedule_expression)

    def get(self, team: str) -> SyncScheduleView | None:
        """`team`'s schedule, or None."""
        detail = self._detail(schedule_name(team))
        if detail is None:
            return None
        return SyncScheduleView(
            team=team,
            schedule=schedule_name(team),
            expression=detail["ScheduleExpression"],
            state=detail.get("State"),
        )

    def _detail(self, name: str) -> Any:
        try:
            return self._client.get_schedule(Name=name, GroupName=self._target.group)
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ResourceNotFoundException":
                return None
            raise

    def list(self) -> list[dict[str, Any]]:
        """Every team's schedule in the stack's group."""
        found = []
        for name in sorted(self._names()):
            detail = self._client.get_schedule(Name=name, GroupName=self._target.group)
            payload = json.loads(detail["Target"].get("Input") or "{}")
            found.append(
                {
                    "team": payload.get("team"),
                    "schedule": name,
                    "expression": detail["ScheduleExpression"],
                    "state": detail.get("State"),
                }
            )
        return found

    def delete(self, team: str) -> bool:
        """Remove `team`'s schedule; False when it had none."""
        try:
            self._client.delete_schedule(Name=schedule_name(team), GroupName=self._target.group)
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ResourceNotFoundException":
                return False
            raise
        return True

    def _names(self) -> set[str]:
        names: set[str] = set()
        paginator = self._client.get_paginator("list_schedules")
        for page in paginator.paginate(GroupName=self._target.group, NamePrefix=SCHEDULE_PREFIX):
            names.update(s["Name"] for s in page.get("Schedules", []))
        return names
