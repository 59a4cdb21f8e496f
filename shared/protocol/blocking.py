"""Blocking calls from async routes: in a worker thread under uvicorn, inline in Lambda."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import threading
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from shared.observability import running_in_lambda
from shared.protocol.workers import CompensatingPool

P = ParamSpec("P")
T = TypeVar("T")

# Calls that hold the GIL at once: `cairn serve --threads` / CAIRN_THREADS. One by default,
# plus a thread for every call that has run SLOW_CALL_SECONDS (it is waiting, not working),
# up to MOST_THREADS: see `shared.protocol.workers` for the measurements behind it.
DEFAULT_THREADS = 1
SLOW_CALL_SECONDS = 0.1
MOST_THREADS = 32
_threads = DEFAULT_THREADS
_pool: CompensatingPool | None = None
_pool_guard = threading.Lock()


def set_threads(count: int) -> None:
    """Run `count` blocking calls at once (before the server starts serving), plus one for each
    that has run `SLOW_CALL_SECONDS`."""
    global _threads, _pool
    if count < 1:
        raise ValueError(f"the number of worker threads must be at least 1 (got {count})")
    with _pool_guard:
        _threads = count
        previous, _pool = _pool, None
    if previous is not None:
        previous.shutdown(wait=False)


def _workers() -> CompensatingPool:
    global _pool
    pool = _pool
    if pool is None:
        with _pool_guard:
            if _pool is None:
                _pool = CompensatingPool(_threads, MOST_THREADS, SLOW_CALL_SECONDS)
            pool = _pool
    return pool


async def run_blocking(function: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """`function(*args, **kwargs)`, which blocks on I/O (DynamoDB, the index, a group invoke).

    Under uvicorn it runs in a worker thread so the event loop keeps serving the other
    connections: the event loop's own executor hand-off (with the caller's context variables),
    about half the CPU of anyio's `to_thread` that Starlette's `run_in_threadpool` goes through
    (25 against 50 µs a call, measured under uvloop). A Lambda container serves one request at
    a time, and under Mangum every invocation is a new root task, so anyio stopped its worker
    thread when the invocation ended: offloading there started a new thread per request
    (`cairn bench cost` counted 41 in 41 calls) for an event loop nobody else was waiting on,
    so it runs inline.
    """
    if running_in_lambda():
        return function(*args, **kwargs)
    call = functools.partial(contextvars.copy_context().run, function, *args, **kwargs)
    return await asyncio.get_running_loop().run_in_executor(_workers(), call)
