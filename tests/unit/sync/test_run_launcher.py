"""The local run worker: runs queued runs in order off the caller's thread, and stops (ending
the run in progress at its next step) before the database closes."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from shared.sync.runs import ThreadRunLauncher


def test_runs_are_done_in_order_on_the_worker_thread() -> None:
    done: list[tuple[str, str, str]] = []

    def execute(team: str, run_id: str, interrupted: Callable[[], bool]) -> None:
        done.append((team, run_id, threading.current_thread().name))

    launcher = ThreadRunLauncher(execute)
    launcher.launch("alpha", "run_1")
    launcher.launch("beta", "run_2")
    launcher.drain()

    assert done == [("alpha", "run_1", "cairn-sync-runs"), ("beta", "run_2", "cairn-sync-runs")]
    launcher.stop()


def test_a_failing_run_does_not_stop_the_worker() -> None:
    done: list[str] = []

    def execute(team: str, run_id: str, interrupted: Callable[[], bool]) -> None:
        if run_id == "run_bad":
            raise RuntimeError("boom")
        done.append(run_id)

    launcher = ThreadRunLauncher(execute)
    launcher.launch("alpha", "run_bad")
    launcher.launch("alpha", "run_good")
    launcher.drain()

    assert done == ["run_good"]
    launcher.stop()


def test_stop_interrupts_the_run_in_progress_and_refuses_new_runs() -> None:
    started = threading.Event()
    ended: list[str] = []

    def execute(team: str, run_id: str, interrupted: Callable[[], bool]) -> None:
        started.set()
        interrupted_at_start = interrupted()
        while not interrupted():  # a long run checking between its progress steps
            time.sleep(0.01)
        ended.append(f"{run_id}{' (already interrupted)' if interrupted_at_start else ''}")

    launcher = ThreadRunLauncher(execute)
    launcher.launch("alpha", "run_long")
    launcher.launch("alpha", "run_never")
    assert started.wait(5)

    launcher.stop(timeout=5)

    # The queued run is handed over interrupted, so the executor records it failed at once.
    assert ended == ["run_long", "run_never (already interrupted)"]
    with pytest.raises(RuntimeError, match="stopping"):
        launcher.launch("alpha", "run_late")
