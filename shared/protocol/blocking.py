"""Blocking calls from async routes: in a worker thread under uvicorn, inline in Lambda."""

from __future__ import annotations

from collections.abc import Callable
from typing import ParamSpec, TypeVar

from starlette.concurrency import run_in_threadpool

from shared.observability import running_in_lambda

P = ParamSpec("P")
T = TypeVar("T")


async def run_blocking(function: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """`function(*args, **kwargs)`, which blocks on I/O (DynamoDB, the index, a group invoke).

    Under uvicorn it runs in a worker thread so the event loop keeps serving the other
    connections. A Lambda container serves one request at a time, and under Mangum every
    invocation is a new root task, so anyio stops its worker thread when the invocation ends:
    offloading there started a new thread per request (`cairn bench cost` counted 41 in 41
    calls) for an event loop nobody else was waiting on, so it runs inline.
    """
    if running_in_lambda():
        return function(*args, **kwargs)
    return await run_in_threadpool(function, *args, **kwargs)
