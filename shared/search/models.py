"""Search models, one per direction: tool inputs, tool outputs, domain records, stored items.

Tool outputs serialise to exactly seed 000's shapes under the gateway's
`model_dump(mode="json", by_alias=True)`: fields the seed marks "only present when …" use
`Field(exclude_if=...)` so they vanish from the dump instead of appearing as `null`.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from shared.tools.inputs import SeedToolInput
from shared.tools.inputs import is_none as _is_none

ResultType = Literal["entity", "memory"]
# What a chunk may be in the index: the search tools' result types, plus the knowledge nodes of
# the `knowledge` group (seed 003), which only that group queries (by asking for the type).
IndexedType = Literal["entity", "memory", "knowledge"]
INDEXED_TYPES: frozenset[str] = frozenset(("entity", "memory", "knowledge"))
SearchMode = Literal["hybrid", "bm25", "vector"]
RESULT_TYPES: tuple[ResultType, ...] = ("entity", "memory")
MAX_QUERY_CHARS = 4096


# --------------------------------------------------------------------------- domain records


@dataclass(frozen=True)
class ChunkDoc:
    """One indexed chunk: what both index adapters store (besides its vector) and return.

    `expires_at` is epoch seconds (memories only); an expired chunk is never returned.
    """

    team: str
    entity_id: str
    chunk_id: str
    chunk_index: int
    text: str
    title: str
    source: str
    result_type: IndexedType = "entity"
    chunk_type: str = "semantic"
    uri: str | None = None
    char_offset_start: int = 0
    char_offset_end: int = 0
    memory_key: str | None = None
    tags: tuple[str, ...] = ()
    expires_at: float | None = None

    def embedding_text(self) -> str:
        """The text the embedder sees: the title gives a chunk its document's topic."""
        return f"{self.title}\n\n{self.text}" if self.title else self.text


@dataclass(frozen=True)
class SearchFilters:
    """Every index query is scoped by `team`; `source`/`types` narrow it; `now` hides expired."""

    team: str
    now: float
    source: str | None = None
    types: frozenset[str] = frozenset(RESULT_TYPES)


@dataclass(frozen=True)
class IndexQuery:
    """One page of a ranked, entity-grouped query against a `SearchIndex`.

    `vector` may still be computing (a `Future`: the query's embedding), so an index can run
    its BM25 leg meanwhile; it reads the vector with `query_vector` where it needs it.
    """

    text: str
    vector: Sequence[float] | Future[list[float]] | None
    filters: SearchFilters
    mode: SearchMode = "hybrid"
    offset: int = 0
    limit: int = 20
    chunks_per_entity: int = 3


def query_vector(query: IndexQuery) -> Sequence[float] | None:
    """The query's vector, waiting for it if it is still being computed."""
    vector = query.vector
    return vector.result() if isinstance(vector, Future) else vector


@dataclass(frozen=True)
class ChunkHit:
    chunk: ChunkDoc
    score: float


@dataclass(frozen=True)
class EntityHits:
    """An entity's best chunks (best first); the entity ranks by its best chunk."""

    entity_id: str
    hits: list[ChunkHit]

    @property
    def score(self) -> float:
        return self.hits[0].score if self.hits else 0.0


@dataclass(frozen=True)
class IndexPage:
    groups: list[EntityHits]
    has_more: bool


@dataclass(frozen=True)
class Chunk:
    """A piece of a document, with offsets into the document's original text."""

    index: int
    text: str
    char_offset_start: int
    char_offset_end: int
    chunk_type: str = "semantic"
    heading: str | None = None


@dataclass
class DocumentInput:
    """A document to index: what a connector hands the service."""

    source: str
    source_id: str
    title: str
    text: str
    uri: str | None = None
    entity_type: str = "document"
    tags: list[str] = field(default_factory=list)
    sensitivity: str = "normal"


# --------------------------------------------------------------------------- stored items


class EntityItem(BaseModel):
    """An entity as the documents table stores it (`pk=TEAM#<team>`, `sk=ENTITY#<id>`)."""

    id: str
    title: str
    uri: str | None = None
    source: str
    source_id: str
    entity_type: str = "document"
    tags: list[str] = Field(default_factory=list)
    sensitivity: str = "normal"
    content_hash: str
    chunk_count: int
    updated_at: str
    deleted: bool = False


class ChunkItem(BaseModel):
    """A chunk as the documents table stores it (`sk=CHUNK#<entity_id>#<index:05d>`)."""

    entity_id: str
    chunk_index: int
    content: str
    chunk_type: str = "semantic"
    char_offset_start: int
    char_offset_end: int
    heading: str | None = None

    @property
    def chunk_id(self) -> str:
        return chunk_id_for(self.entity_id, self.chunk_index)


def chunk_id_for(entity_id: str, index: int) -> str:
    """Seed 000's chunk id: `<entity_id>:<index>`.

    >>> chunk_id_for("a1b2", 2)
    'a1b2:2'
    """
    return f"{entity_id}:{index}"


def parse_chunk_id(chunk_id: str) -> tuple[str, int] | None:
    """`(entity_id, index)` of a chunk id, or None when it is not one."""
    entity_id, sep, index = chunk_id.rpartition(":")
    if not sep or not entity_id or not index.isdigit():
        return None
    return entity_id, int(index)


# --------------------------------------------------------------------------- tool inputs


_ToolInput = SeedToolInput


class SearchInput(_ToolInput):
    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS, description="Search query string.")
    limit: int = Field(
        default=20, ge=1, le=100, description="Maximum number of entities to return."
    )
    cursor: str | None = Field(
        default=None, description="Pagination cursor returned by a previous search."
    )
    source: str | None = Field(
        default=None, description="Optional source filter (e.g., local_files, obsidian)."
    )
    types: list[ResultType] | None = Field(
        default=None, description="Result types to include (entity, memory)."
    )
    include_memory: bool | None = Field(
        default=None, description="Deprecated. Use types instead. True includes memory results."
    )


class GetInput(_ToolInput):
    entity_id: str = Field(
        min_length=1, max_length=256, description="Entity ID from search results."
    )


class GetChunkInput(_ToolInput):
    chunk_id: str = Field(min_length=1, max_length=300, description="Chunk ID from search results.")
    context_chunks: int = Field(
        default=0,
        ge=0,
        le=10,
        description="Number of surrounding chunks to include before/after.",
    )


class SearchReferencesInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(
        min_length=1,
        max_length=MAX_QUERY_CHARS,
        description="What to look up across the operator’s long-form reference documents.",
    )
    # Seed 002 gives no default or bound: 5 keeps an agent's context small, 50 caps the work.
    limit: int = Field(
        default=5, ge=1, le=50, description="Maximum number of reference matches to return."
    )


# --------------------------------------------------------------------------- tool outputs


class SearchChunkOut(BaseModel):
    chunk_id: str
    content: str
    score: float
    char_offset_start: int
    char_offset_end: int


class SearchResultOut(BaseModel):
    result_type: ResultType
    entity_id: str
    entity_title: str
    source: str
    uri: str | None
    # Seed 000: "Memory results include memory_key" — entity results omit the field.
    memory_key: str | None = Field(default=None, exclude_if=_is_none)
    chunks: list[SearchChunkOut]


class SearchOutput(BaseModel):
    results: list[SearchResultOut]
    next_cursor: str | None = Field(
        default=None, description="Pass as `cursor` for the next page; null on the last page."
    )


class EntityChunkOut(BaseModel):
    chunk_id: str
    content: str
    chunk_index: int
    char_offset_start: int
    char_offset_end: int


class EntityOut(BaseModel):
    id: str
    title: str
    uri: str | None
    source: str
    source_id: str
    entity_type: str
    tags: list[str]
    sensitivity: str
    chunks: list[EntityChunkOut]


class GetOutput(BaseModel):
    entity: EntityOut | None


class ContextChunkOut(BaseModel):
    chunk_id: str
    chunk_index: int
    content: str
    char_offset_start: int
    char_offset_end: int
    chunk_type: str


class ChunkContextOut(BaseModel):
    before: list[ContextChunkOut]
    after: list[ContextChunkOut]


class ChunkOut(BaseModel):
    chunk_id: str
    content: str
    chunk_index: int
    chunk_type: str
    char_offset_start: int
    char_offset_end: int
    entity_id: str
    entity_title: str
    source: str
    uri: str | None
    # Seed 000: "The context field is only present when context_chunks > 0."
    context: ChunkContextOut | None = Field(default=None, exclude_if=_is_none)


class GetChunkOutput(BaseModel):
    chunk: ChunkOut | None


class ReferenceOut(BaseModel):
    path: str = Field(description="The reference document's path in the vault (its source id).")
    uri: str | None
    title: str
    entity_id: str
    section: str = Field(description="The section of the document most relevant to the query.")
    chunk_id: str
    score: float


class SearchReferencesOutput(BaseModel):
    results: list[ReferenceOut]
