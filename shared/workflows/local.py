"""The embedded default's workflow worker: a background thread of `make serve` that, every few
seconds, sweeps open executions of every team (timeouts, and anything a crash cut off) and starts
the schedules that are due, of every team that has one. In AWS the state machines time steps out
and EventBridge Scheduler fires schedules."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable

from shared.workflows.service import WorkflowService

logger = logging.getLogger("cairn.workflows")
SWEEP_SECONDS = 5.0


class WorkflowWorker:
    """`schedule_teams` is read at each tick, so a team whose first schedule-triggered workflow
    was created while the server runs has it fired without a restart."""

    def __init__(
        self,
        service: WorkflowService,
        schedule_teams: Callable[[], Iterable[str]],
        interval: float = SWEEP_SECONDS,
    ) -> None:
        self._service = service
        self._schedule_teams = schedule_teams
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="cairn-workflows", daemon=True)

    def start(self) -> None:
        self.tick()  # a restart resumes at once: what the last process left half-done
        self._thread.start()

    def tick(self) -> list[str]:
        """Sweep, then start the due schedules; returns the ids of the workflows started."""
        started: list[str] = []
        try:
            self._service.sweep()
            teams = list(self._schedule_teams())
        except Exception:
            logger.exception("the workflow sweep failed; it runs again shortly")
            return started
        for team in teams:
            try:
                started += self._service.run_due_schedules(team)
            except Exception:  # one team's broken schedule must not stop the other teams'
                logger.exception("a team's workflow schedules failed", extra={"team": team})
        return started

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            self.tick()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=self._interval + 5)
