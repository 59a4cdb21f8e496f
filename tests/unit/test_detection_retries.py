"""Local detection: a failure is logged with the memory's id and the exception's type, and the
memory is examined again rather than lost."""

from __future__ import annotations

import logging

import pytest

from shared.memory.detection import DETECTION_ATTEMPTS, BackgroundDetection
from shared.memory.models import Finding


class FlakyDetector:
    """Fails `failures` times for each memory, then succeeds; records every attempt."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.attempts: list[str] = []

    def detect(self, team: str, memory_id: str) -> list[Finding]:
        self.attempts.append(memory_id)
        if self.attempts.count(memory_id) <= self.failures:
            raise RuntimeError("database is locked (the secret content: hunter2)")
        return []


def test_a_failed_detection_is_logged_with_its_memory_and_tried_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    detector = FlakyDetector(failures=1)
    detection = BackgroundDetection(detector, pauses=(0.0,))  # type: ignore[arg-type]
    with caplog.at_level(logging.WARNING, logger="cairn.memory.detection"):
        detection.submit("alpha", "mem_1")
        detection.drain()
    detection.stop()

    assert detector.attempts == ["mem_1", "mem_1"]
    [warning] = caplog.records
    assert warning.levelno == logging.WARNING
    assert "mem_1" in warning.getMessage()
    assert "RuntimeError" in warning.getMessage()
    assert "trying again" in warning.getMessage()
    assert "hunter2" not in warning.getMessage()


def test_a_detection_that_keeps_failing_is_given_up_with_an_error_and_the_worker_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    detector = FlakyDetector(failures=DETECTION_ATTEMPTS)
    detection = BackgroundDetection(detector, pauses=(0.0,))  # type: ignore[arg-type]
    with caplog.at_level(logging.WARNING, logger="cairn.memory.detection"):
        detection.submit("alpha", "mem_1")
        detection.submit("alpha", "mem_2")
        detection.drain()
    detection.stop()

    assert detector.attempts.count("mem_1") == DETECTION_ATTEMPTS
    assert detector.attempts.count("mem_2") == DETECTION_ATTEMPTS
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert [("mem_1" in r.getMessage(), "given up" in r.getMessage()) for r in errors] == [
        (True, True),
        (False, True),
    ]
