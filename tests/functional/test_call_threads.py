"""The local server's worker threads for tool calls: how many, and how a bad count is refused."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator

import pytest

from shared.local.server import serve
from shared.protocol import blocking


@pytest.fixture(autouse=True)
def _default_threads(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("AWS_LAMBDA_FUNCTION_NAME", raising=False)
    yield
    blocking.set_threads(blocking.DEFAULT_THREADS)


def _threads_used(calls: int, *, together: bool) -> set[str]:
    """Names of the threads that ran `calls` concurrent blocking calls; `together`: each call
    waits until all are in flight (which only a pool of at least `calls` threads allows)."""
    started = threading.Barrier(calls, timeout=10)

    def call() -> str:
        if together:
            started.wait()
        else:
            time.sleep(0.05)  # long enough that the calls overlap
        return threading.current_thread().name

    async def run() -> list[str]:
        return await asyncio.gather(*(blocking.run_blocking(call) for _ in range(calls)))

    return set(asyncio.run(run()))


def test_blocking_calls_run_on_at_most_the_configured_number_of_threads() -> None:
    blocking.set_threads(3)
    used = _threads_used(6, together=False)
    assert 1 <= len(used) <= 3
    assert all(name.startswith("cairn-call") for name in used)


def test_blocking_calls_run_concurrently_up_to_the_configured_number() -> None:
    blocking.set_threads(4)
    assert len(_threads_used(4, together=True)) == 4


def test_a_call_waiting_on_something_slow_does_not_stall_the_others() -> None:
    """One thread for calls that use the GIL (the default), yet a call stuck waiting (a model
    endpoint, a connector) gets company: the next call runs beside it."""
    blocking.set_threads(1)
    release = threading.Event()

    async def run() -> tuple[bool, str]:
        stuck = asyncio.ensure_future(blocking.run_blocking(release.wait, 10))
        await asyncio.sleep(0)
        quick = await asyncio.wait_for(blocking.run_blocking(lambda: "quick"), timeout=5)
        done_first = stuck.done()
        release.set()
        await stuck
        return done_first, quick

    assert asyncio.run(run()) == (False, "quick")


def test_a_thread_count_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        blocking.set_threads(0)


@pytest.mark.parametrize("value", ["0", "many", "-2"])
def test_serve_refuses_a_bad_cairn_threads_before_starting(
    value: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CAIRN_THREADS", value)
    assert serve() == 2
    assert f"CAIRN_THREADS must be a whole number of at least 1 (got '{value}')" in (
        capsys.readouterr().err
    )
