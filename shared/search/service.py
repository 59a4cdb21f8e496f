"""The search service: index documents and memories, answer search / get / get_chunk.

DynamoDB (the `DocumentStore`) is the source of truth; the `SearchIndex` is derived from it and
`rebuild` regenerates it at any time. Every method takes the team explicitly and every index
query carries it, so no call can reach another team's data.
"""

from __future__ import annotations

import contextvars
import hashlib
import json
import math
import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import NamedTuple

from shared.search.chunker import ChunkerConfig, chunk_text
from shared.search.models import (
    RESULT_TYPES,
    ChunkContextOut,
    ChunkDoc,
    ChunkHit,
    ChunkItem,
    ChunkOut,
    ContextChunkOut,
    DocumentInput,
    EntityChunkOut,
    EntityHits,
    EntityItem,
    EntityOut,
    IndexPage,
    IndexQuery,
    ReferenceOut,
    SearchChunkOut,
    SearchFilters,
    SearchInput,
    SearchMode,
    SearchOutput,
    SearchReferencesOutput,
    SearchResultOut,
    chunk_id_for,
    parse_chunk_id,
)
from shared.search.ports import DocumentStore, Embedder, Reranker, SearchIndex, TeamScopedEmbedder
from shared.search.rerank.stage import RerankConfig, reranked_page
from shared.search.threads import LazyPool
from shared.tools.errors import InvalidArgument

MEMORY_SOURCE = "memory"
REFERENCES_SOURCE = "references"
_BATCH_DOCUMENTS = 128
# Deep offsets would rank the whole fused candidate list for nothing: it ends long before.
MAX_OFFSET = 10_000


def parse_cursor(cursor: str | None) -> int:
    """The offset a cursor stands for (`"20"` → 20); errors name the field and the fix."""
    if cursor is None or cursor == "":
        return 0
    if not cursor.isdigit() or int(cursor) > MAX_OFFSET:
        raise InvalidArgument(
            f"`cursor` must be a `next_cursor` returned by a previous search (got {cursor!r}); "
            "pass that value unchanged, or omit `cursor` for the first page",
            field="cursor",
        )
    return int(cursor)


def requested_types(args: SearchInput, may_read_memory: bool) -> frozenset[str]:
    """`types` wins over the deprecated `include_memory`; memories need `memory.read`."""
    if args.types is not None:
        types = set(args.types)
    elif args.include_memory is False:
        types = {"entity"}
    else:
        types = set(RESULT_TYPES)
    if not may_read_memory:
        types.discard("memory")
    return frozenset(types)


def entity_id_for(source: str, source_id: str) -> str:
    """A document's entity id: stable for its (source, source id), 24 hex characters.

    >>> len(entity_id_for("local_files", "notes.md"))
    24
    """
    return hashlib.sha256(f"{source}\x00{source_id}".encode()).hexdigest()[:24]


def content_hash(document: DocumentInput) -> str:
    """Hash of everything that shapes a document's chunks and index entries."""
    payload = json.dumps(
        [
            document.title,
            document.text,
            document.uri,
            document.entity_type,
            document.tags,
            document.sensitivity,
        ]
    )
    return hashlib.sha256(payload.encode()).hexdigest()


# One query's embedding uses one core (the model runs one thread a call), so as many at once
# as there are cores.
_QUERY_EMBEDDING = LazyPool(workers=os.cpu_count() or 2, name="cairn-query-embedding")


def scores_never_rise(page: IndexPage) -> IndexPage:
    """The page in the engine's (fused) order, each score capped by the one listed above it.

    The engine ranks by RRF, while a result's score is the calibrated relevance of its own
    evidence; now and then the two disagree (a chunk BM25 ranks first with a weaker cosine:
    0.136 listed above 0.174). A reader takes the list as best first, so the scores must not
    rise down it; and the RRF order ranks better than the scores do (SciFact nDCG@10 0.726
    in RRF order, 0.718 reordered by score), so the order stays and the score gives way: an
    entity reads its best chunk's relevance, or the score above it if that is lower, and its
    chunks (best first) read theirs, capped likewise. A score therefore never overstates a
    result's own evidence, and the first result's is always its own.
    """
    groups = []
    ceiling = math.inf
    for group in page.groups:
        hits = sorted(group.hits, key=lambda h: -h.score)
        if hits:
            ceiling = min(ceiling, hits[0].score)
        groups.append(
            EntityHits(group.entity_id, [ChunkHit(h.chunk, min(h.score, ceiling)) for h in hits])
        )
    return IndexPage(groups=groups, has_more=page.has_more)


@dataclass
class UpsertStats:
    """What `upsert_documents` did: documents (re)indexed, skipped as unchanged, chunks written."""

    indexed: int = 0
    unchanged: int = 0
    chunks: int = 0


class SearchService:
    """Hybrid search over a team's documents and memories."""

    def __init__(
        self,
        documents: DocumentStore,
        index: SearchIndex,
        embedder: Embedder,
        *,
        chunker: ChunkerConfig | None = None,
        clock: Callable[[], float] = time.time,
        reranker: Reranker | None = None,
        rerank: RerankConfig | None = None,
    ) -> None:
        self.documents = documents
        self.index = index
        self.embedder = embedder
        self._chunker = chunker or ChunkerConfig()
        self._clock = clock
        # Hybrid queries (every tool) rerank their fused top-k when a reranker is configured.
        self.reranker = reranker
        self.rerank_config = rerank or RerankConfig()

    def _now_iso(self) -> str:
        return datetime.fromtimestamp(self._clock(), tz=UTC).isoformat().replace("+00:00", "Z")

    # ------------------------------------------------------------------ documents

    def upsert_documents(
        self,
        team: str,
        documents: Sequence[DocumentInput],
        *,
        force: bool = False,
        progress: Callable[[int], None] | None = None,
    ) -> UpsertStats:
        """Store and index documents; a document whose content hash is unchanged is skipped.

        Documents are embedded in batches across documents, so many small files cost a few
        large embedding calls rather than one call each.
        """
        stats = UpsertStats()
        for start in range(0, len(documents), _BATCH_DOCUMENTS):
            batch = documents[start : start + _BATCH_DOCUMENTS]
            pending: list[tuple[EntityItem, list[ChunkItem]]] = []
            for document in batch:
                entity_id = entity_id_for(document.source, document.source_id)
                digest = content_hash(document)
                existing = self.documents.get_entity(team, entity_id)
                if (
                    not force
                    and existing is not None
                    and not existing.deleted
                    and existing.content_hash == digest
                ):
                    stats.unchanged += 1
                    continue
                chunks = [
                    ChunkItem(
                        entity_id=entity_id,
                        chunk_index=c.index,
                        content=c.text,
                        chunk_type=c.chunk_type,
                        char_offset_start=c.char_offset_start,
                        char_offset_end=c.char_offset_end,
                        heading=c.heading,
                    )
                    for c in chunk_text(document.text, self._chunker)
                ]
                entity = EntityItem(
                    id=entity_id,
                    title=document.title,
                    uri=document.uri,
                    source=document.source,
                    source_id=document.source_id,
                    entity_type=document.entity_type,
                    tags=list(document.tags),
                    sensitivity=document.sensitivity,
                    content_hash=digest,
                    chunk_count=len(chunks),
                    updated_at=self._now_iso(),
                )
                self.documents.put_entity(team, entity, chunks)
                pending.append((entity, chunks))
                stats.indexed += 1
                stats.chunks += len(chunks)
            self._index_entities(team, pending)
            if progress is not None:
                progress(len(batch))
        return stats

    def _index_entities(
        self, team: str, entities: Iterable[tuple[EntityItem, list[ChunkItem]]]
    ) -> int:
        docs: list[ChunkDoc] = []
        empty: list[str] = []
        for entity, chunks in entities:
            if not chunks:
                empty.append(entity.id)
            docs.extend(_chunk_doc(team, entity, chunk) for chunk in chunks)
        for entity_id in empty:
            # A document edited down to nothing keeps no stale chunks in the index.
            self.index.delete_entity(team, entity_id)
        return self._index_docs(docs)

    def delete_document(self, team: str, entity_id: str) -> bool:
        """Tombstone a document and drop it from the index; False when it did not exist."""
        entity = self.documents.get_entity(team, entity_id)
        if entity is None or entity.deleted:
            return False
        self.documents.mark_deleted(team, entity_id, self._now_iso())
        self.index.delete_entity(team, entity_id)
        return True

    def rebuild(
        self,
        team: str,
        source: str | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> int:
        """Re-index `team`'s documents (optionally one source) from the store; returns chunks.

        Index entries of documents the store no longer has are removed; memories are left to
        the memory service, which owns them (asking for source `memory` is an error).
        `progress(documents done, documents in all)` is called after each batch (the sync
        runner's progress report).
        """
        if source == MEMORY_SOURCE:
            raise InvalidArgument(
                "`source` 'memory' is indexed by the memory service; give a document source "
                "(e.g. inbox), or omit `source` to rebuild all of them",
                field="source",
            )
        live = list(self.documents.iter_entities(team, source))
        for stale in self.index.entity_ids(team, source) - {e.id for e in live}:
            self.index.delete_entity(team, stale)
        total = 0
        for start in range(0, len(live), _BATCH_DOCUMENTS):
            batch = live[start : start + _BATCH_DOCUMENTS]
            total += self._index_entities(
                team, [(e, self.documents.chunks(team, e.id)) for e in batch]
            )
            if progress is not None:
                progress(start + len(batch), len(live))
        return total

    # ------------------------------------------------------------------ memories

    def index_memory(
        self,
        team: str,
        memory_id: str,
        key: str | None,
        content: str,
        tags: Sequence[str],
        updated_at: datetime | None = None,
        expires_at: datetime | None = None,
        *,
        title: str | None = None,
    ) -> None:
        """Index (or re-index) one memory as a single chunk; it stops matching at `expires_at`.

        `title` (default: the key) is what the chunk is titled and matched by.
        """
        del updated_at  # the index keeps no history: the latest write replaces the chunk
        self.index_memories(team, [MemoryEntry(memory_id, key, content, tags, expires_at, title)])

    def index_memories(self, team: str, memories: Iterable[MemoryEntry]) -> int:
        """Index many memories at once (batched embedding); returns how many."""
        total = 0
        batch: list[ChunkDoc] = []
        for entry in memories:
            batch.append(_memory_doc(team, MemoryEntry(*entry)))
            if len(batch) == 256:
                total += self._index_docs(batch)
                batch = []
        return total + self._index_docs(batch)

    def _embedder_for(self, team: str) -> Embedder:
        """The embedder of `team`'s texts: a per-team cache when the embedder has one."""
        if isinstance(self.embedder, TeamScopedEmbedder):
            return self.embedder.for_team(team)
        return self.embedder

    def _index_docs(self, docs: list[ChunkDoc]) -> int:
        teams = {d.team for d in docs}
        for team in sorted(teams):
            batch = [d for d in docs if d.team == team] if len(teams) > 1 else docs
            vectors = self._embedder_for(team).embed([d.embedding_text() for d in batch])
            self.index.index(batch, vectors)
        return len(docs)

    def remove_memory(self, team: str, memory_id: str) -> None:
        """Drop a memory from the index."""
        self.index.delete_entity(team, memory_id)

    def search_memories(self, team: str, query: str, limit: int) -> list[tuple[str, float]]:
        """`(memory_id, score)` of the team's live memories, best first."""
        page = self.search(team, query, limit=limit, types=frozenset({"memory"}))
        return [(g.entity_id, g.score) for g in page.groups]

    # ------------------------------------------------------------------ reads

    def search(
        self,
        team: str,
        query: str,
        *,
        limit: int = 20,
        offset: int = 0,
        source: str | None = None,
        types: frozenset[str] = frozenset(RESULT_TYPES),
        mode: SearchMode = "hybrid",
        rerank: bool | None = None,
    ) -> IndexPage:
        """One page of entities (and memories) ranked for `query`, at most 3 chunks each.

        A hybrid page's scores (every tool's) never rise down the list (`scores_never_rise`);
        a single mode's are left as they are. `rerank` (default: whether a reranker is configured)
        reorders the fused top-k of a hybrid query with the reranker; the single modes never
        rerank.
        """
        if not types:
            return IndexPage(groups=[], has_more=False)
        vector = None
        if mode != "bm25":
            # Embedded on another thread, so the index's BM25 leg runs while the model does;
            # in this call's context (its correlation id and trace reach the model's call).
            vector = _QUERY_EMBEDDING.get().submit(
                contextvars.copy_context().run, self._query_vector, team, query
            )
        request = IndexQuery(
            text=query,
            vector=vector,
            filters=SearchFilters(team=team, now=self._clock(), source=source, types=types),
            mode=mode,
            offset=offset,
            limit=limit,
        )
        use_reranker = self.reranker is not None if rerank is None else rerank
        if mode == "hybrid" and use_reranker:
            if self.reranker is None:
                raise ValueError("rerank=True needs a reranker")
            return reranked_page(self.index.query, request, self.reranker, self.rerank_config)
        page = self.index.query(request)
        # The single modes show one ranking alone (the benchmark's view of each leg): a bm25
        # query has no vector, so its scores rest on word coverage only.
        return scores_never_rise(page) if mode == "hybrid" else page

    def _query_vector(self, team: str, query: str) -> list[float]:
        return [float(x) for x in self._embedder_for(team).embed([query])[0]]

    def search_page(self, team: str, args: SearchInput, *, may_read_memory: bool) -> SearchOutput:
        """The `search` tool's answer: one page of results grouped by entity, a memory as one
        chunk carrying its key, and the cursor of the next page."""
        offset = parse_cursor(args.cursor)
        page = self.search(
            team,
            args.query,
            limit=args.limit,
            offset=offset,
            source=args.source,
            types=requested_types(args, may_read_memory),
        )
        results: list[SearchResultOut] = []
        for group in page.groups:
            first = group.hits[0].chunk
            is_memory = first.result_type == "memory"
            hits = group.hits[:1] if is_memory else group.hits
            results.append(
                SearchResultOut(
                    result_type=first.result_type,
                    entity_id=group.entity_id,
                    entity_title=first.title,
                    source=first.source,
                    uri=first.uri,
                    memory_key=first.memory_key if is_memory else None,
                    chunks=[
                        SearchChunkOut(
                            chunk_id=h.chunk.chunk_id,
                            content=h.chunk.text,
                            score=round(h.score, 6),
                            char_offset_start=h.chunk.char_offset_start,
                            char_offset_end=h.chunk.char_offset_end,
                        )
                        for h in hits
                    ],
                )
            )
        next_cursor = str(offset + args.limit) if page.has_more else None
        return SearchOutput(results=results, next_cursor=next_cursor)

    def search_references(self, team: str, query: str, *, limit: int) -> SearchReferencesOutput:
        """The reference documents (source `references`) matching `query`: each one's vault
        path and its best section."""
        page = self.search(
            team, query, limit=limit, source=REFERENCES_SOURCE, types=frozenset({"entity"})
        )
        results: list[ReferenceOut] = []
        for group in page.groups:
            best = group.hits[0]
            entity = self.documents.get_entity(team, group.entity_id)
            if entity is None or entity.deleted:
                continue
            results.append(
                ReferenceOut(
                    path=entity.source_id,
                    uri=entity.uri,
                    title=entity.title,
                    entity_id=entity.id,
                    section=best.chunk.text,
                    chunk_id=best.chunk.chunk_id,
                    score=round(best.score, 6),
                )
            )
        return SearchReferencesOutput(results=results)

    def get_entity(self, team: str, entity_id: str, *, include_memory: bool) -> EntityOut | None:
        """A live document with all its chunks, else (if allowed) a memory as a pseudo-entity."""
        entity = self.documents.get_entity(team, entity_id)
        if entity is not None and not entity.deleted:
            return EntityOut(
                id=entity.id,
                title=entity.title,
                uri=entity.uri,
                source=entity.source,
                source_id=entity.source_id,
                entity_type=entity.entity_type,
                tags=entity.tags,
                sensitivity=entity.sensitivity,
                chunks=[
                    EntityChunkOut(
                        chunk_id=c.chunk_id,
                        content=c.content,
                        chunk_index=c.chunk_index,
                        char_offset_start=c.char_offset_start,
                        char_offset_end=c.char_offset_end,
                    )
                    for c in self.documents.chunks(team, entity_id)
                ],
            )
        if not include_memory:
            return None
        memory = [
            c
            for c in self.index.entity_chunks(team, entity_id, self._clock())
            if c.result_type == "memory"
        ]
        if not memory:
            return None
        first = memory[0]
        return EntityOut(
            id=entity_id,
            title=first.title,
            uri=None,
            source=MEMORY_SOURCE,
            source_id=first.memory_key or entity_id,
            entity_type="memory",
            tags=list(first.tags),
            sensitivity="normal",
            chunks=[
                EntityChunkOut(
                    chunk_id=c.chunk_id,
                    content=c.text,
                    chunk_index=c.chunk_index,
                    char_offset_start=c.char_offset_start,
                    char_offset_end=c.char_offset_end,
                )
                for c in memory
            ],
        )

    def get_chunk(
        self, team: str, chunk_id: str, *, context: int = 0, include_memory: bool
    ) -> ChunkOut | None:
        """One chunk and, when `context` > 0, up to `context` neighbours on each side."""
        parsed = parse_chunk_id(chunk_id)
        if parsed is None:
            return None
        entity_id, index = parsed
        entity = self.documents.get_entity(team, entity_id)
        if entity is not None and not entity.deleted:
            window = self.documents.chunk_range(team, entity_id, index - context, index + context)
            center = next((c for c in window if c.chunk_index == index), None)
            if center is None:
                return None
            before = [c for c in window if c.chunk_index < index]
            after = [c for c in window if c.chunk_index > index]
            return ChunkOut(
                chunk_id=center.chunk_id,
                content=center.content,
                chunk_index=center.chunk_index,
                chunk_type=center.chunk_type,
                char_offset_start=center.char_offset_start,
                char_offset_end=center.char_offset_end,
                entity_id=entity.id,
                entity_title=entity.title,
                source=entity.source,
                uri=entity.uri,
                context=(
                    ChunkContextOut(
                        before=[_context(c) for c in before], after=[_context(c) for c in after]
                    )
                    if context > 0
                    else None
                ),
            )
        if not include_memory:
            return None
        memory = [
            c
            for c in self.index.entity_chunks(team, entity_id, self._clock())
            if c.result_type == "memory" and c.chunk_index == index
        ]
        if not memory:
            return None
        doc = memory[0]
        return ChunkOut(
            chunk_id=doc.chunk_id,
            content=doc.text,
            chunk_index=doc.chunk_index,
            chunk_type=doc.chunk_type,
            char_offset_start=doc.char_offset_start,
            char_offset_end=doc.char_offset_end,
            entity_id=entity_id,
            entity_title=doc.title,
            source=MEMORY_SOURCE,
            uri=None,
            context=ChunkContextOut(before=[], after=[]) if context > 0 else None,
        )


class MemoryEntry(NamedTuple):
    """What the index keeps of a memory."""

    memory_id: str
    key: str | None
    content: str
    tags: Sequence[str]
    expires_at: datetime | None = None
    title: str | None = None


def _memory_doc(team: str, entry: MemoryEntry) -> ChunkDoc:
    return ChunkDoc(
        team=team,
        entity_id=entry.memory_id,
        chunk_id=chunk_id_for(entry.memory_id, 0),
        chunk_index=0,
        text=entry.content,
        title=entry.title or entry.key or "",
        source=MEMORY_SOURCE,
        result_type="memory",
        chunk_type="memory",
        char_offset_start=0,
        char_offset_end=len(entry.content),
        memory_key=entry.key,
        tags=tuple(entry.tags),
        expires_at=entry.expires_at.timestamp() if entry.expires_at is not None else None,
    )


def _chunk_doc(team: str, entity: EntityItem, chunk: ChunkItem) -> ChunkDoc:
    return ChunkDoc(
        team=team,
        entity_id=entity.id,
        chunk_id=chunk.chunk_id,
        chunk_index=chunk.chunk_index,
        text=chunk.content,
        title=entity.title,
        source=entity.source,
        result_type="entity",
        chunk_type=chunk.chunk_type,
        uri=entity.uri,
        char_offset_start=chunk.char_offset_start,
        char_offset_end=chunk.char_offset_end,
    )


def _context(chunk: ChunkItem) -> ContextChunkOut:
    return ContextChunkOut(
        chunk_id=chunk.chunk_id,
        chunk_index=chunk.chunk_index,
        content=chunk.content,
        char_offset_start=chunk.char_offset_start,
        char_offset_end=chunk.char_offset_end,
        chunk_type=chunk.chunk_type,
    )
