"""The embedding cache: vectors keyed by `sha256(model id + text)`.

`CachedEmbedder` wraps any embedder so unchanged text is never embedded twice: locally the
cache is a SQLite table in the data folder (it survives restarts and makes re-indexing and
benchmark reruns cheap); in AWS a bounded in-process cache serves a warm Lambda (Titan is
cheap per call, and a shared cache table would need a key that is not team-first).
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from shared.search.ports import Embedder, EmbeddingCache

if TYPE_CHECKING:
    from shared.search.ports import Vectors


def cache_key(model_id: str, text: str) -> str:
    """The cache key of `text` under `model_id`.

    >>> len(cache_key("m", "hello"))
    64
    """
    return hashlib.sha256(f"{model_id}\x00{text}".encode()).hexdigest()


class MemoryEmbeddingCache:
    """A bounded LRU cache in process memory."""

    def __init__(self, capacity: int = 50_000) -> None:
        self._capacity = capacity
        self._items: OrderedDict[str, Vectors] = OrderedDict()
        self._lock = threading.Lock()

    def get_many(self, keys: Sequence[str]) -> dict[str, Vectors]:
        with self._lock:
            found = {k: self._items[k] for k in keys if k in self._items}
            for key in found:
                self._items.move_to_end(key)
            return found

    def put_many(self, items: dict[str, Vectors]) -> None:
        with self._lock:
            self._items.update(items)
            while len(self._items) > self._capacity:
                self._items.popitem(last=False)


class SqliteEmbeddingCache:
    """A persistent cache: one SQLite table of float32 blobs."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._path = path
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(str(path), check_same_thread=False)
        with self._lock:
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute(
                "CREATE TABLE IF NOT EXISTS embeddings (key TEXT PRIMARY KEY, vector BLOB NOT NULL)"
            )
            self._conn.commit()

    def get_many(self, keys: Sequence[str]) -> dict[str, Vectors]:
        import numpy as np

        found: dict[str, Vectors] = {}
        unique = list(dict.fromkeys(keys))
        with self._lock:
            for start in range(0, len(unique), 500):
                batch = unique[start : start + 500]
                marks = ",".join("?" * len(batch))
                rows = self._conn.execute(
                    f"SELECT key, vector FROM embeddings WHERE key IN ({marks})",  # noqa: S608
                    batch,
                ).fetchall()
                for key, blob in rows:
                    found[key] = np.frombuffer(blob, dtype=np.float32).copy()
        return found

    def put_many(self, items: dict[str, Vectors]) -> None:
        import numpy as np

        with self._lock:
            self._conn.executemany(
                "INSERT OR REPLACE INTO embeddings (key, vector) VALUES (?, ?)",
                [(k, np.asarray(v, dtype=np.float32).tobytes()) for k, v in items.items()],
            )
            self._conn.commit()


class CachedEmbedder:
    """An `Embedder` that consults `cache` first and embeds only the texts it misses."""

    def __init__(self, inner: Embedder, cache: EmbeddingCache) -> None:
        self._inner = inner
        self._cache = cache
        self.misses = 0

    @property
    def model_id(self) -> str:
        return self._inner.model_id

    @property
    def dimensions(self) -> int:
        return self._inner.dimensions

    def embed(self, texts: list[str]) -> Vectors:
        """Vectors for `texts`, in order; cached ones are not recomputed."""
        import numpy as np

        keys = [cache_key(self.model_id, t) for t in texts]
        found = self._cache.get_many(keys)
        missing = list(dict.fromkeys(k for k in keys if k not in found))
        if missing:
            text_of = dict(zip(keys, texts, strict=True))
            fresh = self._inner.embed([text_of[k] for k in missing])
            new = {k: fresh[i] for i, k in enumerate(missing)}
            self._cache.put_many(new)
            found.update(new)
            self.misses += len(missing)
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        return np.stack([found[k] for k in keys]).astype(np.float32, copy=False)
