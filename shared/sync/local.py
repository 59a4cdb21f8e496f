"""The local server's sync scheduler: the embedded default's stand-in for EventBridge Scheduler.

A thread of `cairn serve` wakes every `TICK_SECONDS`, reads every schedule (each team's, and its
connectors') from the database and fires the due ones: a `rate(...)` a period after it last fired
(or was created), a `cron(...)` once its next time after that has come (Scheduler's dialect,
through `shared.workflows.cron`). Firing records the time first (one conditional update, so a
schedule replaced meanwhile does not fire) and then queues a `scheduled` run on the local run
launcher, which does what the sync runner does in AWS. A server that was down misses the firings of
that time and fires once when it is back, as Scheduler with no retries would have caught up.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Final

from shared.sync.adapters.sqlite import SqliteScheduleBook
from shared.sync.schedules import rate_seconds

if TYPE_CHECKING:
    from shared.sync.service import SyncService

logger = logging.getLogger("cairn.sync")
TICK_SECONDS: Final = 20.0


def due(schedule_expression: str, since: datetime, now: datetime) -> bool:
    """Has `schedule_expression` fired after `since`, by `now`?"""
    period = rate_seconds(schedule_expression)
    if period is not None:
        return (now - since).total_seconds() >= period
    from shared.workflows.cron import CronError, next_fire

    try:
        fire = next_fire(schedule_expression, since)
    except CronError:  # checked when it was set; one bad row must not stop the others
        logger.warning("unusable sync schedule", extra={"expression": schedule_expression})
        return False
    return fire is not None and fire <= now


class LocalSyncScheduler:
    """Fires the database's schedules through `fire(team, schedule name, source)` (`source`:
    the connector a connector's schedule syncs alone; None for the team-wide one)."""

    def __init__(
        self,
        book: SqliteScheduleBook,
        fire: Callable[[str, str, str | None], object],
        clock: Callable[[], float] = time.time,
        interval: float = TICK_SECONDS,
    ) -> None:
        self._book = book
        self._fire = fire
        self._clock = clock
        self._interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def tick(self, now: datetime | None = None) -> list[str]:
        """Fire every due schedule once; returns the teams fired (a team once per schedule)."""
        moment = now or datetime.fromtimestamp(self._clock(), tz=UTC)
        fired: list[str] = []
        for schedule, since in self._book.all():
            if not due(schedule.expression, since, moment):
                continue
            if not self._book.mark_fired(
                schedule.team, schedule.expression, moment, schedule.source
            ):
                continue  # replaced or deleted since it was read
            try:
                self._fire(schedule.team, schedule.schedule, schedule.source)
            except Exception as exc:  # one team's failure must not stop the others
                logger.warning(
                    "scheduled sync not started",
                    extra={"team": schedule.team, "error": type(exc).__name__},
                )
                continue
            fired.append(schedule.team)
        return fired

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="cairn-sync-scheduler", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self.tick()
            except Exception:
                logger.exception("the sync scheduler's tick failed; it runs again shortly")

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None and self._thread.is_alive():
            self._thread.join(timeout=self._interval + 5)


def start_local_scheduler(sync: Callable[[], SyncService]) -> LocalSyncScheduler:
    """Start the scheduler of the configured (local) runtime, starting `sync()`'s scheduled
    runs; it stops before the database closes (`runtime.on_reconfigure`)."""
    from shared import runtime
    from shared.sync.wiring import build_local_schedules

    scheduler = LocalSyncScheduler(
        build_local_schedules(),
        lambda team, name, source: sync().start_scheduled(team, name, source),
    )
    runtime.on_reconfigure(scheduler.stop)
    scheduler.start()
    return scheduler
