"""The memory tool group: seed 000's memory_put, memory_get and memory_search."""

from __future__ import annotations

from shared import runtime
from shared.config import names
from shared.memory.adapters.dynamodb import DynamoMemoryStore
from shared.memory.models import (
    MemoryGetInput,
    MemoryOutput,
    MemoryPutInput,
    MemorySearchInput,
    MemorySearchOutput,
)
from shared.memory.service import MemoryService
from shared.search.memory_index import SearchMemoryIndex
from shared.tools.registry import READ_ONLY, Annotations, ToolContext, ToolGroup


@runtime.cached
def build_service() -> MemoryService:
    # Memories are ranked by the hybrid engine (BM25 + vectors), the same one `search` uses.
    store = DynamoMemoryStore(runtime.table(names.TABLE_MEMORIES))
    return MemoryService(store, SearchMemoryIndex())


GROUP: ToolGroup[MemoryService] = ToolGroup(name=names.GROUP_MEMORY, build_service=build_service)


@GROUP.tool(
    name="memory_put",
    title="Store a memory",
    description="Store a memory entry under a key in the team's shared memory. Writing an "
    "existing key replaces its content, tags, metadata and expiry.",
    input_model=MemoryPutInput,
    output_model=MemoryOutput,
    scopes=("memory.write",),
    # Replaces the value under a key (destructive to the old content); same input, same state.
    annotations=Annotations(read_only=False, destructive=True, idempotent=True, open_world=False),
)
def memory_put(ctx: ToolContext[MemoryService], args: MemoryPutInput) -> MemoryOutput:
    memory = ctx.service.put(
        ctx.principal,
        key=args.key,
        content=args.content,
        tags=args.tags,
        metadata=args.metadata,
        ttl_days=args.ttl_days,
        expires_at=args.expires_at,
    )
    return MemoryOutput(memory=memory)


@GROUP.tool(
    name="memory_get",
    title="Fetch a memory",
    description='Fetch a memory entry by key or id. Returns {"memory": null} if it does not exist '
    "or has expired.",
    input_model=MemoryGetInput,
    output_model=MemoryOutput,
    scopes=("memory.read",),
    annotations=READ_ONLY,
)
def memory_get(ctx: ToolContext[MemoryService], args: MemoryGetInput) -> MemoryOutput:
    return MemoryOutput(memory=ctx.service.get(ctx.principal, memory_id=args.id, key=args.key))


@GROUP.tool(
    name="memory_search",
    title="Search memories",
    description="Search the team's memory entries by relevance to a free-text query.",
    input_model=MemorySearchInput,
    output_model=MemorySearchOutput,
    scopes=("memory.read",),
    annotations=READ_ONLY,
)
def memory_search(ctx: ToolContext[MemoryService], args: MemorySearchInput) -> MemorySearchOutput:
    return MemorySearchOutput(
        results=ctx.service.search(ctx.principal, query=args.query, limit=args.limit)
    )
