"""Blocking calls from async routes: in a worker thread under uvicorn, inline in Lambda."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

from shared.observability import running_in_lambda

P = ParamSpec("P")
T = TypeVar("T")

# Worker threads for blocking calls: `cairn serve --threads` / CAIRN_THREADS. Few on purpose:
# every SQLite statement releases and retakes the GIL, so each runnable thread beyond a
# handful adds GIL hand-offs and context switches, not throughput. In the 32-agent claim race
# (`cairn bench store`) 40 threads (anyio's default) cost 2.3 ms of server CPU per claim,
# 12 threads 1.95, 4 threads 1.6 (docs/protocol.md). A call waiting on a slow tool (an
# embedding, a connector) holds its thread, so the default leaves room for some of those.
DEFAULT_THREADS = 8
_threads = DEFAULT_THREADS
_pool: ThreadPoolExecutor | None = None
_pool_guard = threading.Lock()


def set_threads(count: int) -> None:
    """Run blocking calls on `count` worker threads (before the server starts serving)."""
    global _threads, _pool
    if count < 1:
        raise ValueError(f"the number of worker threads must be at least 1 (got {count})")
    with _pool_guard:
        _threads = count
        previous, _pool = _pool, None
    if previous is not None:
        previous.shutdown(wait=False)


def _workers() -> ThreadPoolExecutor:
    global _pool
    pool = _pool
    if pool is None:
        with _pool_guard:
            if _pool is None:
                _pool = ThreadPoolExecutor(_threads, thread_name_prefix="cairn-call")
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
