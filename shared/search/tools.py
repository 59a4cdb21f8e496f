"""The search tool group: seed 000's search, get, get_chunk and seed 002's search_references
(seed 000's embeddings_build is the sync group's: it rebuilds memories too, and a large team's
build runs in the background — `shared.sync.tools`).

Importing this module is cheap (the gateway imports it for tool specs only): the service, and
with it numpy, the tokenizer and the model, is built on the first call.
"""

from __future__ import annotations

from shared.search.group import GROUP
from shared.search.models import (
    GetChunkInput,
    GetChunkOutput,
    GetInput,
    GetOutput,
    SearchInput,
    SearchOutput,
    SearchReferencesInput,
    SearchReferencesOutput,
)
from shared.search.service import SearchService
from shared.tools.registry import READ_ONLY, ToolContext

MEMORY_READ = ("memory.read",)


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
    return ctx.service.search_page(
        ctx.principal.team, args, may_read_memory=ctx.principal.has_any_scope(MEMORY_READ)
    )


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
    return ctx.service.search_references(ctx.principal.team, args.query, limit=args.limit)
