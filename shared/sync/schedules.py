"""Per-team sync schedules on EventBridge Scheduler, and the runner they start.

A schedule lives in the stack's sync schedule group, starts the sync-runner function under the
scheduler role, and carries its team (and, aimed at one connector, its `source`) in its input:
`{"team": "<team>", "schedule": "sync-<team>"}`. A team has one team-wide schedule,
`sync-<team>`, and one per connector, `sync_<team>.<source>-<hash>` (`schedule_name`). The
runner checks the event's name is the one its team and source make before it syncs anything
(`ScheduledSync.checked`), so a schedule can only ever sync the team it names.
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
SOURCE_PREFIX: Final = "sync_"
# A connector schedule's readable head: what the prefix, a `-` and 16 hex digits leave of 64.
_SOURCE_HEAD: Final = 64 - len(SOURCE_PREFIX) - 17
# Scheduler's name limit is 64; a longer team keeps a readable head and a hash of the whole.
_NAME_LIMIT: Final = 64
_EVERY = re.compile(r"^(\d+)\s*(m|min|minutes?|h|hours?|d|days?)$")
_UNITS: Final = {"m": "minutes", "h": "hours", "d": "days"}
MIN_EVERY_MINUTES: Final = 5
TEAM_PATTERN: Final = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"


class ScheduleError(ValueError):
    """A schedule request that cannot be honoured; the message names the option and the fix."""


def schedule_name(team: str, source: str | None = None) -> str:
    """The team-wide `sync-<team>` (`sync-<head>-<hash>` for a team too long for Scheduler's
    64), or a connector's `sync_<team>.<source>-<hash>`.

    A connector's name always ends in a hash of the pair (64 bits), and its `_` can never be a
    team-wide name's fifth character: two pairs, or a pair and a team, never share a name
    (`a` + `b.c` and `a.b` + `c` read alike and hash apart), so one team's schedule can never
    replace another's.

    >>> schedule_name("acme"), schedule_name("acme", "docs")
    ('sync-acme', 'sync_acme.docs-743eb55dc4c0b114')
    """
    if source is not None:
        digest = hashlib.sha256(f"{team}\0{source}".encode()).hexdigest()[:16]
        head = f"{team}.{source}"[:_SOURCE_HEAD]
        return f"{SOURCE_PREFIX}{head}-{digest}"
    name = SCHEDULE_PREFIX + team
    if len(name) <= _NAME_LIMIT:
        return name
    digest = hashlib.sha256(team.encode()).hexdigest()[:12]
    return f"{SCHEDULE_PREFIX}{team[: _NAME_LIMIT - len(SCHEDULE_PREFIX) - 13]}-{digest}"


def team_name_prefix(team: str) -> str:
    """What every one of `team`'s connector schedule names starts with (other teams' names
    may too: `alpha` is a prefix of `alpha2`; the input says whose a schedule is)."""
    return SOURCE_PREFIX + f"{team}."[:_SOURCE_HEAD]


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
    # A connector's schedule syncs that connector alone; absent: the whole team.
    source: str | None = Field(default=None, min_length=1, max_length=64)

    def checked(self, team_exists: Callable[[str], bool]) -> str:
        """The team to sync, once the event is proven to be its own schedule's."""
        expected = schedule_name(self.team, self.source)
        if self.schedule != expected:
            raise ScheduleError(
                f"schedule {self.schedule!r} may not sync team {self.team!r} "
                f"(its schedule is {expected!r})"
            )
        if not team_exists(self.team):
            raise ScheduleError(f"team {self.team!r} has no tokens: nothing to sync for it")
        return self.team


def schedule_input(team: str, source: str | None) -> dict[str, str]:
    """The runner's input a schedule carries (`source` only when it is a connector's)."""
    payload = {"team": team, "schedule": schedule_name(team, source)}
    if source is not None:
        payload["source"] = source
    return payload


@dataclass(frozen=True)
class ScheduleTarget:
    """Where the stack's schedules point: its group, the runner and the role that invokes it."""

    group: str
    runner_arn: str
    role_arn: str


class SyncSchedules:
    """Create, list and delete the per-team (and per-connector) schedules of one stack."""

    def __init__(self, client: EventBridgeSchedulerClient, target: ScheduleTarget) -> None:
        self._client = client
        self._target = target

    def put(
        self, team: str, schedule_expression: str, source: str | None = None
    ) -> SyncScheduleView:
        """Create or replace `team`'s schedule (its connector `source`'s, if given)."""
        name = schedule_name(team, source)
        payload = schedule_input(team, source)
        what = f"team {team}" if source is None else f"connector {source} of team {team}"
        arguments: dict[str, Any] = {
            "Name": name,
            "GroupName": self._target.group,
            "ScheduleExpression": schedule_expression,
            "FlexibleTimeWindow": {"Mode": "FLEXIBLE", "MaximumWindowInMinutes": 5},
            "Target": {
                "Arn": self._target.runner_arn,
                "RoleArn": self._target.role_arn,
                "Input": json.dumps(payload),
                # A missed sync is caught up by the next one: no retry storm.
                "RetryPolicy": {"MaximumRetryAttempts": 0},
            },
            "State": "ENABLED",
            "Description": f"cairn: sync {what}",
        }
        existing = self._detail(name)
        if existing is not None:
            if _payload(existing) != payload:  # never another team's, whatever the name
                raise ScheduleError(f"schedule {name!r} belongs to another team or connector")
            self._client.update_schedule(**arguments)
        else:
            self._client.create_schedule(**arguments)
        return SyncScheduleView(
            team=team, schedule=name, expression=schedule_expression, source=source
        )

    def get(self, team: str, source: str | None = None) -> SyncScheduleView | None:
        """`team`'s schedule (its connector `source`'s, if given), or None."""
        name = schedule_name(team, source)
        detail = self._detail(name)
        if detail is None or _payload(detail) != schedule_input(team, source):
            return None
        return _view(name, detail)

    def team_schedules(self, team: str) -> list[SyncScheduleView]:
        """`team`'s schedules: the team-wide one first, then its connectors' by source."""
        found = [] if (whole := self.get(team)) is None else [whole]
        mine: list[SyncScheduleView] = []
        for name in sorted(self._names(team_name_prefix(team))):
            detail = self._detail(name)
            if detail is None:
                continue
            payload = _payload(detail)
            source = payload.get("source")
            if payload.get("team") == team and source and schedule_name(team, source) == name:
                mine.append(_view(name, detail))
        return found + sorted(mine, key=lambda v: v.source or "")

    def _detail(self, name: str) -> Any:
        try:
            return self._client.get_schedule(Name=name, GroupName=self._target.group)
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ResourceNotFoundException":
                return None
            raise

    def list(self) -> list[dict[str, Any]]:
        """Every team's schedules in the stack's group (a connector's with its `source`)."""
        found = []
        names = self._names(SCHEDULE_PREFIX) | self._names(SOURCE_PREFIX)
        for name in sorted(names):
            detail = self._client.get_schedule(Name=name, GroupName=self._target.group)
            payload = _payload(detail)
            entry = {
                "team": payload.get("team"),
                "schedule": name,
                "expression": detail["ScheduleExpression"],
                "state": detail.get("State"),
            }
            if payload.get("source"):
                entry["source"] = payload["source"]
            found.append(entry)
        return found

    def delete(self, team: str, source: str | None = None) -> bool:
        """Remove `team`'s schedule (its connector `source`'s, if given); False when it had
        none."""
        name = schedule_name(team, source)
        detail = self._detail(name)
        if detail is None or _payload(detail) != schedule_input(team, source):
            return False
        try:
            self._client.delete_schedule(Name=name, GroupName=self._target.group)
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ResourceNotFoundException":
                return False
            raise
        return True

    def _names(self, prefix: str) -> set[str]:
        names: set[str] = set()
        paginator = self._client.get_paginator("list_schedules")
        for page in paginator.paginate(GroupName=self._target.group, NamePrefix=prefix):
            names.update(s["Name"] for s in page.get("Schedules", []))
        return names


def _payload(detail: Any) -> dict[str, Any]:
    try:
        payload = json.loads(detail["Target"].get("Input") or "{}")
    except ValueError:
        return {}
    return payload if isinstance(payload, dict) else {}


def _view(name: str, detail: Any) -> SyncScheduleView:
    return SyncScheduleView(
        team=_payload(detail).get("team", ""),
        schedule=name,
        expression=detail["ScheduleExpression"],
        state=detail.get("State"),
        source=_payload(detail).get("source"),
    )
