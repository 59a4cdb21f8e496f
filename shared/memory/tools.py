"""The memory tool group: seed 000's memory_put, memory_get and memory_search, and seed 002's
remember, recall and flag_memory — views of one memory record.

Seed 002's descriptions are its text verbatim ("the exact text an agent receives at call time").
"""

from __future__ import annotations

from shared.memory.group import GROUP, arguments
from shared.memory.models import (
    FlagMemoryInput,
    FlagMemoryOutput,
    Memory,
    MemoryGetInput,
    MemoryOutput,
    MemoryPutInput,
    MemorySearchInput,
    MemorySearchOutput,
    RecalledMemory,
    RecallInput,
    RecallOutput,
    RememberInput,
    RememberOutput,
)
from shared.memory.service import MemoryService
from shared.tools.registry import APPEND, READ_ONLY, Annotations, ToolContext

__all__ = ["GROUP"]


@GROUP.tool(
    name="memory_put",
    title="Store a memory",
    description="Store a memory entry under a key in the team's shared memory. Writing an "
    "existing key replaces its content, tags, metadata and expiry.",
    scopes=("memory.write",),
    # Replaces the value under a key (destructive to the old content); same input, same state.
    annotations=Annotations(read_only=False, destructive=True, idempotent=True, open_world=False),
)
def memory_put(ctx: ToolContext[MemoryService], args: MemoryPutInput) -> MemoryOutput:
    return MemoryOutput(memory=ctx.service.put(ctx.principal, **arguments(args)))


@GROUP.tool(
    name="memory_get",
    title="Fetch a memory",
    description='Fetch a memory entry by key or id. Returns {"memory": null} if it does not exist '
    "or has expired.",
    scopes=("memory.read",),
    annotations=READ_ONLY,
)
def memory_get(ctx: ToolContext[MemoryService], args: MemoryGetInput) -> MemoryOutput:
    return MemoryOutput(memory=ctx.service.get(ctx.principal, memory_id=args.id, key=args.key))


@GROUP.tool(
    name="memory_search",
    title="Search memories",
    description="Search the team's memory entries by relevance to a free-text query.",
    scopes=("memory.read",),
    annotations=READ_ONLY,
)
def memory_search(ctx: ToolContext[MemoryService], args: MemorySearchInput) -> MemorySearchOutput:
    return MemorySearchOutput(
        results=ctx.service.search(ctx.principal, query=args.query, limit=args.limit)
    )


@GROUP.tool(
    name="remember",
    title="Remember",
    description="Save a durable fact, preference, or decision the moment you learn it — not "
    "transient chatter. Fire-and-forget: submit and move on; the curator files it "
    "asynchronously (dedupe, merge, link — no need to check first). Give it a short title and "
    "a self-contained body; add tags so it surfaces in the right context. Caller-supplied "
    "is_global / requires_approval are ignored.",
    scopes=("memory.write",),
    # Each call submits a new memory (the curator may merge it): not idempotent, erases nothing.
    annotations=APPEND,
)
def remember(ctx: ToolContext[MemoryService], args: RememberInput) -> RememberOutput:
    # Seed 002: the caller's is_global / requires_approval are ignored.
    memory = ctx.service.remember(
        ctx.principal, **arguments(args, "is_global", "requires_approval")
    )
    return RememberOutput(memory_id=memory.id)


def _recalled(memory: Memory, include_id: bool) -> RecalledMemory:
    return RecalledMemory(
        id=memory.id if include_id else None,
        title=memory.heading,
        body=memory.content,
        tags=memory.tags,
        applies_to=memory.applies_to,
        confidence=memory.confidence,
        flagged=memory.flagged,
        updated_at=memory.updated_at,
    )


def _line(item: RecalledMemory) -> str:
    prefix = f"[{item.id}] " if item.id else ""
    heading = f"{item.title}: " if item.title else ""
    flag = " (flagged)" if item.flagged else ""
    return f"{prefix}{heading}{item.body}{flag}"


@GROUP.tool(
    name="recall",
    title="Recall",
    description="Search the owner’s durable memories. Call this before answering anything that "
    "may have prior context — at task start, and whenever a stored fact, preference, or past "
    "decision could change your answer. Memories only: long-form reference docs are NOT here — "
    "search those with search_references. Query by free text; tags narrows to memories "
    "carrying any of the supplied tags. Pass include_ids: true to prefix each result with its "
    "memory id, so a memory that turns out to be wrong can be passed straight to flag_memory.",
    scopes=("memory.read",),
    annotations=READ_ONLY,
)
def recall(ctx: ToolContext[MemoryService], args: RecallInput) -> RecallOutput:
    memories = ctx.service.recall(ctx.principal, query=args.query, tags=args.tags, limit=args.limit)
    items = [_recalled(m, args.include_ids) for m in memories]
    return RecallOutput(memories=items, text="\n".join(_line(i) for i in items))


@GROUP.tool(
    name="flag_memory",
    title="Flag a memory",
    description="A recalled memory is wrong, misleading, or outdated — flag it with a short "
    "free-text reason (required: say why). The flag routes the memory to human review and "
    "demotes it below unflagged matches in recall; it never edits, archives, or deletes, and "
    "there is no ‘this was useful’ counterpart. Use it sparingly, only when a memory actively "
    "led you astray.",
    scopes=("memory.write",),
    # Adds a flag record; the memory itself is never edited. Flagging twice records two flags.
    annotations=APPEND,
)
def flag_memory(ctx: ToolContext[MemoryService], args: FlagMemoryInput) -> FlagMemoryOutput:
    memory = ctx.service.flag(ctx.principal, memory_id=args.memory_id, reason=args.reason)
    return FlagMemoryOutput(memory_id=memory.id, flag_count=len(memory.flags))
