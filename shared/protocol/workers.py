"""The local server's worker threads for blocking calls: few, and one more for each stuck call.

Every SQLite statement releases and retakes the GIL, so each runnable thread beyond the first
adds GIL hand-offs and context switches, not throughput. In the 32-agent claim race one worker
used 1.08-1.21 ms of server CPU per claim and served 731-943 claims/s, two 1.33-1.42 ms and
630-734, eight 1.54-1.62 ms and 549-627 (docs/protocol.md). But a fixed pool that small stalls
every agent behind one call waiting on something slow (a model endpoint, a connector, another
process's write lock). So the pool keeps `quick` threads for calls that use the GIL, and a call
that has run for `slow_after` seconds is taken to be waiting rather than working: it stops
counting, and another thread may start for the queue, up to `most`. Those extra threads leave
once the queue is empty.

The check is cheap: `submit` compares the few threads' start times, and a watchdog looks again
every `slow_after / 2` only while calls wait behind busy threads.
"""

from __future__ import annotations

import itertools
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any, ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")

_Work = tuple[Future[Any], Callable[..., Any], tuple[Any, ...], dict[str, Any]]


class _Worker:
    """One thread; `started` is when its current call began (None while it waits for one).
    Written by its thread alone; read under the pool's lock, where a stale value only delays
    a compensation to the next look."""

    def __init__(self) -> None:
        self.started: float | None = None


class CompensatingPool(Executor):
    """`quick` threads, plus one for every call running longer than `slow_after` seconds, up to
    `most` (see the module's docstring)."""

    def __init__(
        self, quick: int, most: int, slow_after: float, *, name: str = "cairn-call"
    ) -> None:
        if quick < 1:
            raise ValueError(f"the number of worker threads must be at least 1 (got {quick})")
        self._quick = quick
        self._most = max(quick, most)
        self._slow_after = slow_after
        self._name = name
        self._queue: queue.SimpleQueue[_Work | None] = queue.SimpleQueue()
        self._workers: list[_Worker] = []
        self._lock = threading.Lock()
        self._waiting = threading.Event()  # set while calls may be queued behind busy threads
        self._shutdown = False
        self._watchdog: threading.Thread | None = None
        self._thread_numbers = itertools.count(1)  # for thread names only

    @property
    def threads(self) -> int:
        """Threads alive now."""
        with self._lock:
            return len(self._workers)

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        future: Future[T] = Future()
        with self._lock:
            if self._shutdown:
                raise RuntimeError("cannot schedule new calls after shutdown")
            self._queue.put((future, fn, args, kwargs))
            self._compensate()
            if any(worker.started is not None for worker in self._workers):
                if self._watchdog is None:
                    self._watchdog = threading.Thread(
                        target=self._watch, name=f"{self._name}-watchdog", daemon=True
                    )
                    self._watchdog.start()
                if not self._waiting.is_set():
                    self._waiting.set()
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            self._shutdown = True
            workers = list(self._workers)
            if cancel_futures:
                while True:
                    try:
                        work = self._queue.get_nowait()
                    except queue.Empty:
                        break
                    if work is not None:
                        work[0].cancel()
            self._waiting.set()  # the watchdog sees the shutdown and ends
        for _ in workers:
            self._queue.put(None)

    def _compensate(self) -> None:
        """With the lock held: start threads until `quick` of them are not in slow calls (an
        idle thread counts as not slow, so a free thread means none starts)."""
        began_before = time.monotonic() - self._slow_after
        stuck = sum(1 for w in self._workers if w.started is not None and w.started <= began_before)
        while len(self._workers) - stuck < self._quick and len(self._workers) < self._most:
            worker = _Worker()
            self._workers.append(worker)
            threading.Thread(
                target=self._run,
                args=(worker,),
                name=f"{self._name}-{next(self._thread_numbers)}",
                daemon=True,
            ).start()

    def _run(self, worker: _Worker) -> None:
        while True:
            try:
                # A thread beyond `quick` leaves once it has found nothing to do for a while
                # (read without the lock: a stale count only changes how long it waits).
                extra = len(self._workers) > self._quick
                work = self._queue.get(timeout=self._slow_after) if extra else self._queue.get()
            except queue.Empty:
                with self._lock:
                    if len(self._workers) > self._quick:
                        self._workers.remove(worker)
                        return
                continue
            if work is None:
                with self._lock:
                    self._workers.remove(worker)
                return
            future, fn, args, kwargs = work
            if not future.set_running_or_notify_cancel():
                continue
            worker.started = time.monotonic()
            try:
                result = fn(*args, **kwargs)
            except BaseException as exc:  # handed to the caller, as ThreadPoolExecutor does
                future.set_exception(exc)
            else:
                future.set_result(result)
            finally:
                worker.started = None

    def _watch(self) -> None:
        """While calls wait behind busy threads, look every `slow_after / 2` for threads that
        have become stuck (no new submit may come to notice)."""
        while True:
            self._waiting.wait()
            with self._lock:
                if self._shutdown:
                    return
                if self._queue.empty():
                    self._waiting.clear()
                    continue
                self._compensate()
            time.sleep(self._slow_after / 2)
