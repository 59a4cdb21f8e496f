"""Test-only helpers for the search tests: a hashing embedder and an in-memory document store.

The hashing embedder is deterministic and model-free: a text's vector is its bag of words
hashed into buckets, so texts sharing words are close. It exists only here, never in `shared/`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Sequence

import numpy as np
import numpy.typing as npt

from shared.search.models import ChunkItem, EntityItem

_WORD = re.compile(r"[a-z0-9]+")


class HashingEmbedder:
    """Bag-of-words hashed into `dimensions` buckets, L2-normalised. Counts its calls."""

    model_id = "test/hashing"

    def __init__(self, dimensions: int = 64) -> None:
        self.dimensions = dimensions
        self.embedded: list[str] = []

    def embed(self, texts: list[str]) -> npt.NDArray[np.float32]:
        self.embedded.extend(texts)
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in _WORD.findall(text.lower()):
                bucket = int(hashlib.md5(word.encode()).hexdigest()[:8], 16) % self.dimensions
                out[row, bucket] += 1.0
            norm = np.linalg.norm(out[row])
            if norm == 0:
                out[row, 0] = 1.0
            else:
                out[row] /= norm
        return out


class MemoryDocumentStore:
    """`DocumentStore` in a dict keyed (team, entity id): for unit tests of the service."""

    def __init__(self) -> None:
        self.entities: dict[tuple[str, str], EntityItem] = {}
        self.chunk_items: dict[tuple[str, str], list[ChunkItem]] = {}

    def get_entity(self, team: str, entity_id: str) -> EntityItem | None:
        return self.entities.get((team, entity_id))

    def put_entity(self, team: str, entity: EntityItem, chunks: Sequence[ChunkItem]) -> None:
        self.entities[(team, entity.id)] = entity
        self.chunk_items[(team, entity.id)] = list(chunks)

    def chunks(self, team: str, entity_id: str) -> list[ChunkItem]:
        return list(self.chunk_items.get((team, entity_id), []))

    def chunk_range(self, team: str, entity_id: str, first: int, last: int) -> list[ChunkItem]:
        return [c for c in self.chunks(team, entity_id) if first <= c.chunk_index <= last]

    def mark_deleted(self, team: str, entity_id: str, when: str) -> None:
        entity = self.entities[(team, entity_id)]
        self.entities[(team, entity_id)] = entity.model_copy(
            update={"deleted": True, "chunk_count": 0, "updated_at": when}
        )
        self.chunk_items.pop((team, entity_id), None)

    def iter_entities(self, team: str, source: str | None = None) -> Iterator[EntityItem]:
        for (owner, _), entity in sorted(self.entities.items()):
            if owner == team and not entity.deleted and source in (None, entity.source):
                yield entity
