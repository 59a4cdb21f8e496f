"""Seed 000's advanced memory tools, registered on the memory group: structured memories with
review, supersession, retraction, bi-temporal queries, conflicts and duplicates — views of the
one memory record (shared.memory.lifecycle holds the logic; docs/memory.md the design)."""

from __future__ import annotations

from shared.memory.group import GROUP, arguments
from shared.memory.lifecycle_models import (
    ConflictResolveInput,
    DuplicateResolveInput,
    FindingResolveOutput,
    FindingsListInput,
    FindingsListOutput,
    FindingView,
    MemoryProposeInput,
    MemoryQueryInput,
    MemoryQueryOutput,
    MemoryRecordOutput,
    MemoryRetractInput,
    MemoryReviewInput,
    MemoryReviewOutput,
    MemorySupersedeInput,
    MemorySupersedeOutput,
    MemoryWriteInput,
)
from shared.memory.models import FindingKind
from shared.memory.service import MemoryService
from shared.tools.registry import APPEND, READ_ONLY, Annotations, ToolContext

# Ends a version's validity or hides it from every listing (kept, never deleted); a repeat
# finds the memory already in that state.
_RETRACT = Annotations(read_only=False, destructive=True, idempotent=True, open_world=False)
# Closes the old version and writes a new one: each call adds a version.
_REPLACE = Annotations(read_only=False, destructive=True, idempotent=False, open_world=False)
# A decision is made once; repeating it changes nothing (the proposal is no longer open).
_DECIDE = Annotations(read_only=False, destructive=False, idempotent=True, open_world=False)


@GROUP.tool(
    name="memory_write",
    title="Write a structured memory",
    description="Create a structured memory record: `content` plus `subject`, `kind` "
    "(fact, decision, preference, procedure, observation), `sources` (provenance), "
    "`confidence` (0-1) and its valid time (`valid_from` / `valid_to`). The author is the "
    "calling token. Filed at once; the curator then looks for conflicts and duplicates.",
    scopes=("memory.write",),
    annotations=APPEND,
)
def memory_write(ctx: ToolContext[MemoryService], args: MemoryWriteInput) -> MemoryRecordOutput:
    return MemoryRecordOutput(memory=ctx.service.lifecycle.write(ctx.principal, **arguments(args)))


@GROUP.tool(
    name="memory_propose",
    title="Propose a memory",
    description="File a memory as a proposal for human review: invisible to recall and "
    "search until a reviewer approves it with memory_review (and for good if rejected).",
    scopes=("memory.write",),
    annotations=APPEND,
)
def memory_propose(ctx: ToolContext[MemoryService], args: MemoryProposeInput) -> MemoryRecordOutput:
    memory = ctx.service.lifecycle.propose(ctx.principal, **arguments(args))
    return MemoryRecordOutput(memory=memory)


@GROUP.tool(
    name="memory_query",
    title="Query structured memories",
    description="Structured memories filtered by `subject`, `kind`, `tags`, `created_by`, "
    "`status` and `flagged`, optionally ranked by a free-text `query`. `as_of` asks what was true "
    "then (valid time), `known_at` what the team knew then (transaction time), "
    "`versions_of` returns a memory's whole version chain. Retracted, superseded and "
    "proposed records are left out unless `status` asks for them. Cursor-paginated.",
    scopes=("memory.read",),
    annotations=READ_ONLY,
)
def memory_query(ctx: ToolContext[MemoryService], args: MemoryQueryInput) -> MemoryQueryOutput:
    memories, cursor = ctx.service.lifecycle.query(ctx.principal, **arguments(args))
    return MemoryQueryOutput(memories=memories, next_cursor=cursor)


@GROUP.tool(
    name="memory_retract",
    title="Retract a memory",
    description="Mark an active memory retracted, with a `reason`. It is never deleted and "
    "keeps its history, but drops out of recall, memory_search, search and memory_query.",
    scopes=("memory.write",),
    annotations=_RETRACT,
)
def memory_retract(ctx: ToolContext[MemoryService], args: MemoryRetractInput) -> MemoryRecordOutput:
    memory = ctx.service.lifecycle.retract(ctx.principal, memory_id=args.id, reason=args.reason)
    return MemoryRecordOutput(memory=memory)


@GROUP.tool(
    name="memory_supersede",
    title="Supersede a memory",
    description="Write a new version of an active memory (`id` plus the new `content`; "
    "other fields default to the old version's). The old version's validity ends where the "
    "new one's begins (`valid_from`, default now); the two link to each other and "
    "memory_query `versions_of` reads the whole chain.",
    scopes=("memory.write",),
    annotations=_REPLACE,
)
def memory_supersede(
    ctx: ToolContext[MemoryService], args: MemorySupersedeInput
) -> MemorySupersedeOutput:
    new, old = ctx.service.lifecycle.supersede(
        ctx.principal, memory_id=args.id, **arguments(args, "id")
    )
    return MemorySupersedeOutput(memory=new, superseded=old)


@GROUP.tool(
    name="memory_review",
    title="Review memory proposals",
    description="Approve or reject one or more proposals (`ids`, `decision`, `note`). Needs "
    "the `memory.review` scope. Each proposal is decided once: if another reviewer decided "
    "first, its result says `decided: false` and the status that won.",
    scopes=("memory.review",),
    annotations=_DECIDE,
)
def memory_review(ctx: ToolContext[MemoryService], args: MemoryReviewInput) -> MemoryReviewOutput:
    results = ctx.service.lifecycle.review(ctx.principal, **arguments(args))
    return MemoryReviewOutput(results=results)


def _findings(
    ctx: ToolContext[MemoryService], args: FindingsListInput, kind: FindingKind
) -> FindingsListOutput:
    rows, cursor = ctx.service.lifecycle.findings(
        ctx.principal, kind=kind, status=args.status, limit=args.limit, cursor=args.cursor
    )
    return FindingsListOutput(
        items=[FindingView(finding=f, memories=m) for f, m in rows], next_cursor=cursor
    )


@GROUP.tool(
    name="conflicts_list",
    title="List memory conflicts",
    description="Conflicts the curator found: two active memories about the same subject "
    "(or key, or title) whose claims differ and neither supersedes the other; `status` "
    "open (default), resolved, dismissed or all. Each comes with its memories.",
    scopes=("memory.read",),
    annotations=READ_ONLY,
)
def conflicts_list(ctx: ToolContext[MemoryService], args: FindingsListInput) -> FindingsListOutput:
    return _findings(ctx, args, "conflict")


@GROUP.tool(
    name="conflict_resolve",
    title="Resolve a memory conflict",
    description="Resolve a conflict: `keep` one (`keep_id`; the other is superseded by it), "
    "`merge` both into a new version (`content`), or mark `both_valid` (never reported "
    "again).",
    scopes=("memory.write",),
    annotations=_REPLACE,
)
def conflict_resolve(
    ctx: ToolContext[MemoryService], args: ConflictResolveInput
) -> FindingResolveOutput:
    finding, memories = ctx.service.lifecycle.resolve_conflict(
        ctx.principal, finding_id=args.id, **arguments(args, "id")
    )
    return FindingResolveOutput(finding=finding, memories=memories)


@GROUP.tool(
    name="duplicates_list",
    title="List memory duplicates",
    description="Duplicate clusters the curator found: near-identical active memories (same "
    "body, or embeddings above its threshold); `status` open (default), resolved, "
    "dismissed or all.",
    scopes=("memory.read",),
    annotations=READ_ONLY,
)
def duplicates_list(ctx: ToolContext[MemoryService], args: FindingsListInput) -> FindingsListOutput:
    return _findings(ctx, args, "duplicate")


@GROUP.tool(
    name="duplicate_resolve",
    title="Resolve a duplicate cluster",
    description="`merge` a cluster into one member (`keep_id`, default the oldest) that keeps "
    "every member's tags and sources and names the others in its provenance (they are "
    "superseded by it), or `dismiss` it.",
    scopes=("memory.write",),
    annotations=_REPLACE,
)
def duplicate_resolve(
    ctx: ToolContext[MemoryService], args: DuplicateResolveInput
) -> FindingResolveOutput:
    finding, memories = ctx.service.lifecycle.resolve_duplicates(
        ctx.principal, finding_id=args.id, **arguments(args, "id")
    )
    return FindingResolveOutput(finding=finding, memories=memories)
