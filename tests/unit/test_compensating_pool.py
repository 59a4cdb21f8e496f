"""The local server's worker pool: `quick` threads for calls that use the GIL, one more for each
call stuck past `slow_after`, up to `most`, and back to `quick` once the queue is empty."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import pytest

from shared.protocol.workers import CompensatingPool

SLOW = 0.05


@pytest.fixture
def pool() -> Iterator[CompensatingPool]:
    pool = CompensatingPool(1, 3, SLOW)
    yield pool
    pool.shutdown()


def _until(condition: Callable[[], bool], seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.005)
    return condition()


def test_quick_calls_share_the_quick_threads_and_return_results_and_errors(
    pool: CompensatingPool,
) -> None:
    running, most_at_once, guard = [0], [0], threading.Lock()

    def call(n: int) -> int:
        with guard:
            running[0] += 1
            most_at_once[0] = max(most_at_once[0], running[0])
        time.sleep(0.002)  # well under SLOW: working, not stuck
        with guard:
            running[0] -= 1
        return n * 2

    futures = [pool.submit(call, n) for n in range(20)]
    assert [f.result(timeout=5) for f in futures] == [n * 2 for n in range(20)]
    assert most_at_once[0] == 1
    assert pool.threads == 1

    def fail() -> None:
        raise KeyError("the caller sees this")

    with pytest.raises(KeyError, match="the caller sees this"):
        pool.submit(fail).result(timeout=5)


def test_a_stuck_call_does_not_hold_up_the_next_one(pool: CompensatingPool) -> None:
    """The quick call is queued at once, before the first is stuck: only the watchdog, looking
    again after SLOW, can start it a thread."""
    release = threading.Event()
    stuck = pool.submit(release.wait, 10)
    quick = pool.submit(lambda: "done")
    try:
        assert quick.result(timeout=5) == "done"
        assert not stuck.done()
        assert pool.threads == 2
    finally:
        release.set()
    assert stuck.result(timeout=5) is True
    # The extra thread leaves once it finds nothing to do.
    assert _until(lambda: pool.threads == 1)


def test_threads_stop_at_most_and_the_rest_wait_their_turn(pool: CompensatingPool) -> None:
    release = threading.Event()
    stuck = [pool.submit(release.wait, 10) for _ in range(3)]
    assert _until(lambda: pool.threads == 3)
    waiting = pool.submit(lambda: "after")
    time.sleep(SLOW * 4)
    assert not waiting.done()
    assert pool.threads == 3
    release.set()
    assert waiting.result(timeout=5) == "after"
    assert all(f.result(timeout=5) for f in stuck)


def test_a_cancelled_call_is_skipped_and_shutdown_refuses_new_calls() -> None:
    pool = CompensatingPool(1, 1, SLOW)
    release = threading.Event()
    first = pool.submit(release.wait, 10)
    second = pool.submit(lambda: "never")
    assert second.cancel()
    release.set()
    assert first.result(timeout=5) is True
    assert second.cancelled()
    pool.shutdown()
    assert _until(lambda: pool.threads == 0)
    with pytest.raises(RuntimeError, match="after shutdown"):
        pool.submit(lambda: None)


def test_fewer_than_one_quick_thread_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        CompensatingPool(0, 4, SLOW)
