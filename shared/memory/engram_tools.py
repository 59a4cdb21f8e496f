"""Seed 004's engram and profile tools, registered on the memory group.

An engram is a memory record owned by a wallet, typed, with a key unique per wallet and JSON
content; memory_search, recall and search find engrams like any memory. Descriptions are seed
004's. Responses (the seed gives none) are documented in docs/memory.md.
"""

from __future__ import annotations

import json
from typing import Any

from shared.memory.group import GROUP, arguments
from shared.memory.models import (
    Engram,
    EngramCreateInput,
    EngramDeleteInput,
    EngramDeleteOutput,
    EngramGetInput,
    EngramListByTypeInput,
    EngramListOutput,
    EngramOutput,
    EngramSearchInput,
    EngramUpdateInput,
    Memory,
    UserProfileGetInput,
    UserProfileOutput,
    UserProfileUpdateInput,
)
from shared.memory.service import PROFILE_PREFIX, MemoryService
from shared.tools.registry import APPEND, READ_ONLY, Annotations, ToolContext

# Seed 004's annotation table is the contract: engram_update is a "Write" (neither destructive
# nor idempotent) and user_profile_update an "Idempotent write" (not destructive).
WRITE = APPEND
IDEMPOTENT_WRITE = Annotations(
    read_only=False, destructive=False, idempotent=True, open_world=False
)


def _page(memories: list[Memory], offset: int, limit: int) -> EngramListOutput:
    page = memories[offset : offset + limit]
    more = offset + len(page) < len(memories)
    return EngramListOutput(
        engrams=[Engram.of(m) for m in page],
        total=len(memories),
        next_offset=offset + len(page) if more else None,
    )


def _parsed(content: str) -> Any:
    try:
        return json.loads(content)
    except ValueError:
        return content  # written before validation existed elsewhere: show it as text


@GROUP.tool(
    name="engram_create",
    title="Create an engram",
    description="Create a new engram (memory unit) for a wallet.",
    scopes=("memory.write",),
    annotations=APPEND,  # each call creates a new engram
)
def engram_create(ctx: ToolContext[MemoryService], args: EngramCreateInput) -> EngramOutput:
    memory = ctx.service.engram_create(ctx.principal, **arguments(args))
    return EngramOutput(engram=Engram.of(memory))


@GROUP.tool(
    name="engram_get",
    title="Get an engram",
    description="Get a specific engram by wallet address and key.",
    scopes=("memory.read",),
    annotations=READ_ONLY,
)
def engram_get(ctx: ToolContext[MemoryService], args: EngramGetInput) -> EngramOutput:
    memory = ctx.service.engram_get(ctx.principal, wallet_address=args.wallet_address, key=args.key)
    return EngramOutput(engram=Engram.of(memory) if memory else None)


@GROUP.tool(
    name="engram_search",
    title="Search engrams",
    description="Search engrams with filters by wallet, type, tags, and query.",
    scopes=("memory.read",),
    annotations=READ_ONLY,
)
def engram_search(ctx: ToolContext[MemoryService], args: EngramSearchInput) -> EngramListOutput:
    found = ctx.service.engrams(ctx.principal, **arguments(args, "offset", "limit"))
    return _page(found, args.offset, args.limit)


@GROUP.tool(
    name="engram_update",
    title="Update an engram",
    description="Update an existing engram's content and/or tags by its ID.",
    scopes=("memory.write",),
    annotations=WRITE,
)
def engram_update(ctx: ToolContext[MemoryService], args: EngramUpdateInput) -> EngramOutput:
    memory = ctx.service.engram_update(
        ctx.principal, engram_id=args.id, content=args.content, tags=args.tags
    )
    return EngramOutput(engram=Engram.of(memory))


@GROUP.tool(
    name="engram_delete",
    title="Delete an engram",
    description="Delete an engram by its ID. This action is permanent.",
    scopes=("memory.write",),
    # Not idempotent, as seed 004's annotation table has it: a repeat answers differently
    # (a 404 naming `id`), which tells a caller whose first delete it never saw that the
    # engram is gone, and catches a mistyped id.
    annotations=Annotations(read_only=False, destructive=True, idempotent=False, open_world=False),
)
def engram_delete(ctx: ToolContext[MemoryService], args: EngramDeleteInput) -> EngramDeleteOutput:
    ctx.service.engram_delete(ctx.principal, engram_id=args.id)
    return EngramDeleteOutput(id=args.id)


@GROUP.tool(
    name="engram_list_by_type",
    title="List engrams by type",
    description="List all engrams for a wallet filtered by engram type.",
    scopes=("memory.read",),
    annotations=READ_ONLY,
)
def engram_list_by_type(
    ctx: ToolContext[MemoryService], args: EngramListByTypeInput
) -> EngramListOutput:
    found = ctx.service.engrams(
        ctx.principal,
        wallet_address=args.wallet_address,
        engram_type=args.engram_type,
        tags=[],
    )
    return _page(found, args.offset, args.limit)


@GROUP.tool(
    name="user_profile_get",
    title="Get a user profile",
    description="Get user profile engrams (persona type with `user.profile.*` keys) for a wallet.",
    scopes=("memory.read",),
    annotations=READ_ONLY,
)
def user_profile_get(
    ctx: ToolContext[MemoryService], args: UserProfileGetInput
) -> UserProfileOutput:
    fields = ctx.service.profile(ctx.principal, wallet_address=args.wallet_address)
    return UserProfileOutput(
        wallet_address=args.wallet_address,
        profile={(m.key or "").removeprefix(PROFILE_PREFIX): _parsed(m.content) for m in fields},
        engrams=[Engram.of(m) for m in fields],
    )


@GROUP.tool(
    name="user_profile_update",
    title="Update a user profile field",
    description="Update a user profile engram field. Maps field name to engram key "
    "`user.profile.<field>`.",
    scopes=("memory.write",),
    annotations=IDEMPOTENT_WRITE,
)
def user_profile_update(
    ctx: ToolContext[MemoryService], args: UserProfileUpdateInput
) -> EngramOutput:
    memory = ctx.service.profile_update(
        ctx.principal,
        wallet_address=args.wallet_address,
        field=args.field,
        content=args.content,
    )
    return EngramOutput(engram=Engram.of(memory))
