"""A stop of the local background workers is bounded: the item in progress finishes, the rest
of the backlog is abandoned with a line saying how much, and the worker ends before the stores
close (a stop used to work through the whole backlog: 63 s, then errors from a closed database)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence

import pytest

from shared.knowledge.adapters.queues import SLICE_EVENTS, BackgroundQueue
from shared.memory.detection import BackgroundDetection
from shared.memory.models import Finding


class SlowWork:
    """Records what it was given; each call takes `seconds`, the first waits to be let go."""

    def __init__(self, seconds: float = 0.2) -> None:
        self.seconds = seconds
        self.started = threading.Event()
        self.done: list[object] = []

    def enrich(self, team: str, event_ids: Sequence[str]) -> None:
        self.started.set()
        time.sleep(self.seconds)
        self.done.append(list(event_ids))

    def detect(self, team: str, memory_id: str) -> list[Finding]:
        self.started.set()
        time.sleep(self.seconds)
        self.done.append(memory_id)
        return []


def test_an_enrichment_stop_finishes_the_slice_in_progress_and_abandons_the_backlog(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Given 20 batches of 500 events queued: 100 slices, 20 s of work
    work = SlowWork()
    queue = BackgroundQueue(work.enrich)
    for batch in range(20):
        queue.submit("alpha", [f"e{batch}-{k}" for k in range(500)])
    assert work.started.wait(5)

    # When it stops
    began = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="cairn.knowledge"):
        queue.stop()
    took = time.monotonic() - began

    # Then only the slice in progress ran (slices of at most SLICE_EVENTS), the thread ended,
    # and the log says what was left
    assert took < 1.0
    assert len(work.done) == 1
    assert len(work.done[0]) == SLICE_EVENTS  # type: ignore[arg-type]
    assert not queue._thread.is_alive()
    [warning] = caplog.records
    assert f"{20 * 500 - SLICE_EVENTS} event(s) left unenriched" in warning.getMessage()
    queue.submit("alpha", ["late"])  # after the stop: accepted, not run, no error
    assert len(work.done) == 1


def test_a_detection_stop_finishes_the_memory_in_progress_and_abandons_the_rest(
    caplog: pytest.LogCaptureFixture,
) -> None:
    work = SlowWork()
    detection = BackgroundDetection(work)  # type: ignore[arg-type]
    for n in range(50):
        detection.submit("alpha", f"mem_{n}")
    assert work.started.wait(5)

    began = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="cairn.memory.detection"):
        detection.stop()

    assert time.monotonic() - began < 1.0
    assert work.done == ["mem_0"]
    [warning] = caplog.records
    assert "49 memory(ies)" in warning.getMessage()
