"""EventBridge Scheduler's `cron(...)` expressions, evaluated locally (the embedded default's
stand-in for Scheduler). Parsing is cronsim's; this module maps Scheduler's dialect onto it:

- six fields, `minutes hours day-of-month month day-of-week year`; the year is checked here;
- `?` (no specific value, one of the two day fields) is `*`;
- days of the week are numbered 1-7 from Sunday in Scheduler and 0-6 in cron, so numbers shift
  down by one (names such as MON-FRI are the same in both).

Times are in `timezone` (the schedule's, default UTC), as Scheduler evaluates them.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError

CRON = re.compile(r"^cron\(\s*(.+?)\s*\)$")
# A weekday number: not a count after `#`, a step after `/`, or part of a longer number.
_WEEKDAY_NUMBER = re.compile(r"(?<![#/\d])([1-7])(?!\d)")
_YEARS_AHEAD = 50


class CronError(ValueError):
    """An expression Scheduler would refuse; the message says which part."""


def _cron_fields(expression: str) -> tuple[str, str]:
    match = CRON.match(expression.strip())
    if match is None:
        raise CronError(f"not a cron(...) expression: {expression!r}")
    fields = match.group(1).split()
    if len(fields) != 6:
        raise CronError(
            f"cron(...) takes six fields (minutes hours day-of-month month day-of-week year); "
            f"{expression!r} has {len(fields)}"
        )
    minutes, hours, days, months, weekdays, years = fields
    if days != "?" and weekdays != "?":
        raise CronError("one of day-of-month and day-of-week must be `?` in Scheduler's cron")
    weekdays = _WEEKDAY_NUMBER.sub(lambda m: str(int(m.group(1)) - 1), weekdays)
    standard = " ".join(
        (minutes, hours, "*" if days == "?" else days, months, "*" if weekdays == "?" else weekdays)
    )
    return standard, years


def _year_matches(years: str, year: int) -> bool:
    if years == "*":
        return True
    for part in years.split(","):
        low, _, high = part.partition("-")
        if low.isdigit() and (high.isdigit() or not high):
            if int(low) <= year <= int(high or low):
                return True
        else:
            raise CronError(f"year field {years!r}: use *, a year, a range or a list of them")
    return False


def next_fire(expression: str, after: datetime, timezone: str | None = None) -> datetime | None:
    """The first time strictly after `after` that `cron(...)` fires (UTC), or None when it
    never fires again (a year in the past).

    >>> start = datetime(2026, 11, 23, 10, 0, tzinfo=UTC)  # a Monday
    >>> next_fire("cron(0 9 ? * MON-FRI *)", start)
    datetime.datetime(2026, 11, 24, 9, 0, tzinfo=datetime.timezone.utc)
    >>> next_fire("cron(30 8 ? * 1 *)", start)  # 1 is Sunday in Scheduler
    datetime.datetime(2026, 11, 29, 8, 30, tzinfo=datetime.timezone.utc)
    """
    standard, years = _cron_fields(expression)
    try:
        zone = ZoneInfo(timezone or "UTC")
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise CronError(f"unknown timezone {timezone!r}") from exc
    local = after.astimezone(zone).replace(tzinfo=None, second=0, microsecond=0)
    try:
        times = CronSim(standard, local)
    except CronSimError as exc:
        raise CronError(f"{expression!r}: {exc}") from exc
    limit = after.year + _YEARS_AHEAD
    for candidate in times:
        if candidate.year > limit:
            return None
        if not _year_matches(years, candidate.year):
            continue
        fire = candidate.replace(tzinfo=zone).astimezone(UTC)
        if fire > after:
            return fire
    return None  # pragma: no cover - CronSim is infinite


def check(expression: str, timezone: str | None = None) -> None:
    """`CronError` unless `expression` parses and fires at least once more."""
    if next_fire(expression, datetime.now(UTC) - timedelta(minutes=1), timezone) is None:
        raise CronError(f"{expression!r} never fires again")
