"""The embedded default's workflow worker: a background thread of `make serve` that, every few
seconds, sweeps open executions (timeouts, and anything a crash cut off) and starts the
`rate(...)` schedules that are due. In AWS the state machines time steps out and EventBridge
Scheduler fires schedules."""

from __future__ import annotations

import logging
import threading

from shared.workflows.service import WorkflowService

logger = logging.getLogger("cairn.workflows")
SWEEP_SECONDS = 5.0


class WorkflowWorker:
    def __init__(
        self, service: WorkflowService, teams: list[str], interval: float = SWEEP_SECONDS
    ) -> None:
        self._service = service
        self._teams = teams
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="cairn-workflows", daemon=True)

    def start(self) -> None:
        self.tick()  # a restart resumes at once: what the last process left half-done
        self._thread.start()

    def tick(self) -> None:
        try:
            self._service.sweep()
            for team in self._teams:
                self._service.run_due_schedules(team)
        except Exception:
            logger.exception("the workflow sweep failed; it runs again shortly")

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            self.tick()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=self._interval + 5)
