"""Process-wide thread pools for a query's concurrent parts, each made on first use."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor


class LazyPool:
    """One `ThreadPoolExecutor` for the process, created the first time `get` is called, so a
    process that never needs it (a Lambda that only writes, a BM25-only query) starts none."""

    def __init__(self, workers: int, name: str) -> None:
        self._workers = workers
        self._name = name
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def get(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(
                    max_workers=self._workers, thread_name_prefix=self._name
                )
            return self._pool
