"""The memory service's `MemoryIndex` port, served by the hybrid search engine.

`shared.memory` calls `index` / `remove` on every write and `search` for `memory_search` and
`recall`; memories then also appear in `search` with `types: ["memory"]`. Structural typing
(`MemoryLike`) keeps this module free of imports from `shared.memory`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Protocol

from shared.search.service import MemoryEntry, SearchService


class MemoryLike(Protocol):
    """The fields of a memory the index needs (shared.memory.models.Memory has them)."""

    @property
    def id(self) -> str: ...

    @property
    def key(self) -> str | None: ...

    @property
    def content(self) -> str: ...

    @property
    def tags(self) -> Sequence[str]: ...

    @property
    def updated_at(self) -> datetime: ...

    @property
    def expires_at(self) -> datetime | None: ...

    @property
    def heading(self) -> str | None:
        """The title the index shows and matches (a memory's title, else its key)."""
        ...


class SearchMemoryIndex:
    """`MemoryIndex` (index / remove / search) on top of `SearchService`.

    >>> index = SearchMemoryIndex()  # doctest: +SKIP
    >>> index.search("team-a", "deploy freeze", limit=5)  # doctest: +SKIP
    [('mem_3f…', 0.98)]
    """

    def __init__(self, service: SearchService | Callable[[], SearchService] | None = None) -> None:
        if service is None:
            from shared.search.wiring import build_search_service

            service = build_search_service
        self._service = service

    def _resolve(self) -> SearchService:
        return self._service if isinstance(self._service, SearchService) else self._service()

    def index(self, team: str, memory: MemoryLike) -> None:
        """Index or re-index one memory (expired ones stop matching at `expires_at`)."""
        self._resolve().index_memory(
            team,
            memory.id,
            memory.key,
            memory.content,
            list(memory.tags),
            memory.updated_at,
            memory.expires_at,
            title=memory.heading,
        )

    def rebuild(self, team: str, memories: Iterable[MemoryLike]) -> int:
        """Re-index every memory given (e.g. all of a team's live memories); returns the count.

        For the memory service after an index loss: `embeddings_build` rebuilds documents only.
        """
        return self._resolve().index_memories(
            team,
            (
                MemoryEntry(m.id, m.key, m.content, list(m.tags), m.expires_at, m.heading)
                for m in memories
            ),
        )

    def remove(self, team: str, memory_id: str) -> None:
        """Drop one memory from the index."""
        self._resolve().remove_memory(team, memory_id)

    def search(self, team: str, query: str, limit: int) -> list[tuple[str, float]]:
        """`(memory_id, score)` best first, live memories of `team` only."""
        return self._resolve().search_memories(team, query, limit)

    def similarities(self, text: str, others: list[str]) -> list[float]:
        """Cosine similarity of `text` to each of `others` under the engine's embedder."""
        import numpy as np

        if not others:
            return []
        vectors = np.asarray(self._resolve().embedder.embed([text, *others]), dtype=np.float32)
        norms = np.linalg.norm(vectors, axis=1)
        norms[norms == 0] = 1.0
        unit = vectors / norms[:, None]
        return [float(x) for x in unit[1:] @ unit[0]]
