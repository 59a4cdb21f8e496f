"""The embedding cache: vectors keyed by `sha256(model id + team + text)`.

`CachedEmbedder` wraps any embedder so unchanged text is never embedded twice: locally the
cache is a SQLite table in the data folder (it survives restarts and makes re-indexing and
benchmark reruns cheap); in AWS a bounded in-process cache serves a warm Lambda (Titan is
cheap per call, and a shared cache table would need a key that is not team-first).

Keys carry the team (`for_team`): with a cache keyed by text alone, a team could tell from the
latency of a search (a hit answers in a few milliseconds, a miss pays the model) whether any
other team had already searched or stored the exact same string. The price is that two teams
indexing the same text embed it once each.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from shared.search.ports import Embedder, EmbedderWrapper, EmbeddingCache

if TYPE_CHECKING:
    from shared.search.ports import Vectors


def cache_key(model_id: str, text: str, team: str | None = None) -> str:
    """The cache key of `text` under `model_id`, for `team` (None: not team-scoped).

    >>> len(cache_key("m", "hello", "alpha"))
    64
    >>> cache_key("m", "hello", "alpha") != cache_key("m", "hello", "beta")
    True
    """
    if team is None:
        return hashlib.sha256(f"{model_id}\x00{text}".encode()).hexdigest()
    return hashlib.sha256(f"{model_id}\x00team\x00{team}\x00{text}".encode()).hexdigest()


def cache_identity(embedder: Embedder) -> str:
    """What the cache keys name: the model id, and the embedder's `vectors_version` if it has one.

    The version changes when the same model's vectors change beyond float noise (MiniLM's
    GELU moved from the tanh form to exact erf, up to 4e-4 per component), so vectors cached
    before are not served beside new ones; the index's recorded model stays the model id.
    """
    version = getattr(embedder, "vectors_version", None)
    return f"{embedder.model_id}#{version}" if version else embedder.model_id


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


class CachedEmbedder(EmbedderWrapper):
    """An `Embedder` that consults `cache` first and embeds only the texts it misses.

    `embed` uses keys of no team (the curator's similarity checks); `for_team(team)` is the
    view the search service uses for a team's documents, memories and queries.
    `adopt_unscoped` lets a team-scoped miss reuse a vector stored under the unscoped key
    (copying it to the team's key): only for the single-team benchmark, whose cache predates
    team keys — never in a server, where it would reopen the timing channel.
    """

    def __init__(
        self, inner: Embedder, cache: EmbeddingCache, *, adopt_unscoped: bool = False
    ) -> None:
        super().__init__(inner)
        self._cache = cache
        self._adopt_unscoped = adopt_unscoped
        self._key_model = cache_identity(inner)
        self.misses = 0

    def embed(self, texts: list[str]) -> Vectors:
        """Vectors for `texts`, in order; cached ones are not recomputed (no team's keys)."""
        return self._embed(texts, None)

    def for_team(self, team: str) -> Embedder:
        """This embedder with its cache keyed for `team` alone."""
        return _TeamEmbedder(self, team)

    def _embed(self, texts: list[str], team: str | None) -> Vectors:
        import numpy as np

        keys = [cache_key(self._key_model, t, team) for t in texts]
        found = self._cache.get_many(keys)
        missing = list(dict.fromkeys(k for k in keys if k not in found))
        text_of = dict(zip(keys, texts, strict=True))
        if missing and team is not None and self._adopt_unscoped:
            legacy = {cache_key(self._key_model, text_of[k]): k for k in missing}
            adopted = {legacy[old]: v for old, v in self._cache.get_many(list(legacy)).items()}
            if adopted:
                self._cache.put_many(adopted)
                found.update(adopted)
                missing = [k for k in missing if k not in adopted]
        if missing:
            fresh = self._inner.embed([text_of[k] for k in missing])
            new = {k: fresh[i] for i, k in enumerate(missing)}
            self._cache.put_many(new)
            found.update(new)
            self.misses += len(missing)
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        return np.stack([found[k] for k in keys]).astype(np.float32, copy=False)


class _TeamEmbedder(EmbedderWrapper):
    """`CachedEmbedder.for_team`: the same model and cache, keys of one team."""

    def __init__(self, parent: CachedEmbedder, team: str) -> None:
        super().__init__(parent)
        self._parent = parent
        self._team = team

    def embed(self, texts: list[str]) -> Vectors:
        """Vectors for `texts` through the cache entries of this team only."""
        return self._parent._embed(texts, self._team)
