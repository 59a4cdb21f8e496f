"""The search tool group: seed 000's search, get, get_chunk, embeddings_build and seed 002's
search_references.

Importing this module is cheap (the gateway imports it for tool specs only): the service, and
with it numpy, the tokenizer and the model, is built on the first call.
"""

from __future__ import annotations

from shared.config import names
from shared.search.models import (
    RESULT_TYPES,
    EmbeddingsBuildInput,
    EmbeddingsBuildOutput,
    GetChunkInput,
    GetChunkOutput,
    GetInput,
    GetOutput,
    ReferenceOut,
    SearchChunkOut,
    SearchInput,
    SearchOutput,
    SearchReferencesInput,
    SearchReferencesOutput,
    SearchResultOut,
)
from shared.search.service import MEMORY_SOURCE, REFERENCES_SOURCE, SearchService
from shared.search.wiring import build_search_service
from shared.tools.errors import InvalidArgument
from shared.tools.registry import READ_ONLY, Annotations, ToolContext, ToolGroup

MEMORY_READ = ("memory.read",)
# Deep offsets would rank the whole fused candidate list for nothing: it ends long before.
MAX_OFFSET = 10_000

GROUP: ToolGroup[SearchService] = ToolGroup(
    name=names.GROUP_SEARCH, build_service=build_search_service
)


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


@GROUP.tool(
    name="search",
    title="Hybrid search",
    description="Hybrid search (BM25 + vectors, fused by reciprocal rank) over the team's "
    "indexed documents and memories. Results are grouped by entity (up to 3 best chunks each); "
    "memory results carry memory_key and a single chunk. Pass next_cursor as cursor for more.",
    scopes=("search",),
    annotations=READ_ONLY,
)
def search(ctx: ToolContext[SearchService], args: SearchInput) -> SearchOutput:
    offset = parse_cursor(args.cursor)
    types = requested_types(args, ctx.principal.has_any_scope(MEMORY_READ))
    page = ctx.service.search(
        ctx.principal.team,
        args.query,
        limit=args.limit,
        offset=offset,
        source=args.source,
        types=types,
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


@GROUP.tool(
    name="get",
    title="Get an entity",
    description='Get an entity and all its chunks. Returns {"entity": null} if it does not '
    "exist. With memory access, a memory id returns that memory as a pseudo-entity.",
    scopes=("get",),
    annotations=READ_ONLY,
)
def get(ctx: ToolContext[SearchService], args: GetInput) -> GetOutput:
    entity = ctx.service.get_entity(
        ctx.principal.team,
        args.entity_id,
        include_memory=ctx.principal.has_any_scope(MEMORY_READ),
    )
    return GetOutput(entity=entity)


@GROUP.tool(
    name="get_chunk",
    title="Get a chunk",
    description="Get a single chunk by ID, optionally with up to 10 surrounding chunks before "
    'and after (context is present only when context_chunks > 0). Returns {"chunk": null} if '
    "it does not exist.",
    scopes=("get",),
    annotations=READ_ONLY,
)
def get_chunk(ctx: ToolContext[SearchService], args: GetChunkInput) -> GetChunkOutput:
    chunk = ctx.service.get_chunk(
        ctx.principal.team,
        args.chunk_id,
        context=args.context_chunks,
        include_memory=ctx.principal.has_any_scope(MEMORY_READ),
    )
    return GetChunkOutput(chunk=chunk)


@GROUP.tool(
    name="embeddings_build",
    title="Rebuild the search index",
    description="Rebuild the team's search index (chunks and embeddings) from the stored "
    "documents, optionally for one source. Unchanged text reuses cached embeddings. Returns "
    "the number of chunks indexed.",
    scopes=("sync",),
    # Rewrites derived index entries only (never a user's data); the same call converges to
    # the same index.
    annotations=Annotations(read_only=False, destructive=False, idempotent=True, open_world=False),
)
def embeddings_build(
    ctx: ToolContext[SearchService], args: EmbeddingsBuildInput
) -> EmbeddingsBuildOutput:
    if args.source == MEMORY_SOURCE:
        raise InvalidArgument(
            "`source` 'memory' is indexed by the memory service; give a document source "
            "(e.g. inbox), or omit `source` to rebuild all of them",
            field="source",
        )
    return EmbeddingsBuildOutput(total=ctx.service.rebuild(ctx.principal.team, args.source))


@GROUP.tool(
    name="search_references",
    title="Search reference documents",
    # Seed 002: "each verb's description below is the exact text an agent receives".
    description="Search the long-form reference documents (background material the operator "
    "filed under references/ — specs, manuals, design notes). References are deliberately NOT "
    "auto-recalled and never appear in recall results, so search here when the task needs that "
    "depth. Returns each match’s vault path + the query-relevant section.",
    scopes=("search",),
    annotations=READ_ONLY,
)
def search_references(
    ctx: ToolContext[SearchService], args: SearchReferencesInput
) -> SearchReferencesOutput:
    team = ctx.principal.team
    page = ctx.service.search(
        team,
        args.query,
        limit=args.limit,
        source=REFERENCES_SOURCE,
        types=frozenset({"entity"}),
    )
    results: list[ReferenceOut] = []
    for group in page.groups:
        best = group.hits[0]
        entity = ctx.service.documents.get_entity(team, group.entity_id)
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
