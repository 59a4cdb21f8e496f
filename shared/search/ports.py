"""What the search service needs from the outside world: an index, an embedder, a document store.

Each port has an AWS adapter and an embedded one; both kinds pass the same contract tests.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from shared.search.models import ChunkDoc, ChunkItem, EntityItem, IndexPage, IndexQuery

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Vectors = npt.NDArray[np.float32]


class SearchIndex(Protocol):
    """A derived, rebuildable index of chunks: BM25 + vectors, always filtered by team."""

    def index(self, chunks: Sequence[ChunkDoc], vectors: Vectors) -> None:
        """Insert or replace `chunks` (row i of `vectors` is chunk i's unit vector)."""
        ...

    def delete_entity(self, team: str, entity_id: str) -> None:
        """Remove every chunk of one entity (a document or a memory) of `team`."""
        ...

    def delete_team(self, team: str) -> int:
        """Remove everything indexed for `team` (its erasure); how many chunks went."""
        ...

    def query(self, query: IndexQuery) -> IndexPage:
        """One page of entities ranked by BM25, vector or their RRF fusion, grouped by entity."""
        ...

    def entity_chunks(self, team: str, entity_id: str, now: float) -> list[ChunkDoc]:
        """The live chunks of one entity in chunk order (empty when absent or expired)."""
        ...

    def entity_ids(self, team: str, source: str | None = None) -> set[str]:
        """Ids of the document entities (not memories) indexed for `team` (and `source`)."""
        ...


class Embedder(Protocol):
    """Text → unit-length vectors of a fixed dimension."""

    @property
    def model_id(self) -> str: ...

    @property
    def dimensions(self) -> int: ...

    def embed(self, texts: list[str]) -> Vectors:
        """One row per text, L2-normalised float32."""
        ...


class EmbedderWrapper:
    """Base of an embedder that adds to another (a cache, progress reports): the model and its
    dimensions are the inner embedder's."""

    def __init__(self, inner: Embedder) -> None:
        self._inner = inner

    @property
    def model_id(self) -> str:
        return self._inner.model_id

    @property
    def dimensions(self) -> int:
        return self._inner.dimensions


@runtime_checkable
class TeamScopedEmbedder(Embedder, Protocol):
    """An embedder whose state (its cache) can be kept per team.

    `for_team(team)` is the embedder that team's writes and queries go through: a cache
    shared across teams would tell a team, by how fast its query is answered, whether
    another team already embedded the same text.
    """

    def for_team(self, team: str) -> Embedder: ...


class Reranker(Protocol):
    """A cross-encoder: reads a query and a passage together and scores their relevance.

    Adapters: `CrossEncoderReranker` (a BERT cross-encoder in numpy, weights verified against
    the upstream hashes) and `BedrockReranker` (Bedrock's rerank models).
    """

    @property
    def model_id(self) -> str: ...

    def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        """One score per passage, in input order; higher is more relevant."""
        ...


class EmbeddingCache(Protocol):
    """Vectors by `sha256(model id + team + text)`: unchanged text is never embedded twice."""

    def get_many(self, keys: Sequence[str]) -> dict[str, Vectors]: ...

    def put_many(self, items: dict[str, Vectors]) -> None: ...


class DocumentStore(Protocol):
    """Source of truth for documents: entities and their chunks, keyed by team first."""

    def get_entity(self, team: str, entity_id: str) -> EntityItem | None:
        """The entity, tombstones included (callers check `deleted`)."""
        ...

    def put_entity(self, team: str, entity: EntityItem, chunks: Sequence[ChunkItem]) -> None:
        """Store an entity and replace all of its chunks."""
        ...

    def chunks(self, team: str, entity_id: str) -> list[ChunkItem]:
        """Every chunk of an entity in order."""
        ...

    def chunk_range(self, team: str, entity_id: str, first: int, last: int) -> list[ChunkItem]:
        """Chunks `first..last` (inclusive) of an entity, in order."""
        ...

    def mark_deleted(self, team: str, entity_id: str, when: str) -> None:
        """Tombstone an entity and drop its chunks."""
        ...

    def iter_entities(self, team: str, source: str | None = None) -> Iterator[EntityItem]:
        """Every live (not deleted) entity of `team`, optionally of one source."""
        ...
