"""The sync tool group: seed 000's sync, sync_status, sync_run and inbox_put."""

from __future__ import annotations

from shared.config import names
from shared.sync.models import (
    InboxPutInput,
    InboxPutOutput,
    SyncInput,
    SyncOutput,
    SyncStatusInput,
    SyncStatusOutput,
)
from shared.sync.service import SyncService
from shared.sync.wiring import build_sync_service
from shared.tools.registry import APPEND, READ_ONLY, Annotations, ToolContext, ToolGroup

GROUP: ToolGroup[SyncService] = ToolGroup(name=names.GROUP_SYNC, build_service=build_sync_service)
# Re-running a sync with nothing new changes nothing; it mirrors deletions made in the inbox.
_SYNC = Annotations(read_only=False, destructive=False, idempotent=True, open_world=False)


@GROUP.tool(
    name="sync",
    title="Run sync",
    description="Run sync for enabled connectors with a lock to prevent concurrent runs. "
    'Returns each connector\'s result and the expired memories pruned, or {"skipped": true, '
    '"reason": "lock"} while another sync of the team runs.',
    scopes=("sync",),
    annotations=_SYNC,
)
def sync(ctx: ToolContext[SyncService], args: SyncInput) -> SyncOutput:
    return ctx.service.sync(ctx.principal, source=args.source, lock=True)


@GROUP.tool(
    name="sync_run",
    title="Run sync without lock",
    description="Run sync without lock (advanced): the same work as sync, even while another "
    "sync of the team holds the lock.",
    scopes=("sync",),
    annotations=_SYNC,
)
def sync_run(ctx: ToolContext[SyncService], args: SyncInput) -> SyncOutput:
    return ctx.service.sync(ctx.principal, source=args.source, lock=False)


@GROUP.tool(
    name="sync_status",
    title="Sync status",
    description="Get connector sync status: each connector and document source of the team "
    "with its live entity count and last sync time.",
    scopes=("sync",),
    annotations=READ_ONLY,
)
def sync_status(ctx: ToolContext[SyncService], args: SyncStatusInput) -> SyncStatusOutput:
    return SyncStatusOutput(connectors=ctx.service.status(ctx.principal))


@GROUP.tool(
    name="inbox_put",
    title="Write to the inbox",
    description="Write content into the agent inbox. It is indexed (source `inbox`) at the next "
    "sync, or at once with sync_immediately (which needs the sync scope; `synced` says whether "
    "it ran — not while another sync holds the team's lock).",
    scopes=("ingest",),
    # Each call files a new file; nothing is overwritten.
    annotations=APPEND,
)
def inbox_put(ctx: ToolContext[SyncService], args: InboxPutInput) -> InboxPutOutput:
    path, synced = ctx.service.inbox_put(
        ctx.principal,
        content=args.content,
        title=args.title,
        tags=args.tags,
        metadata=args.metadata,
        filename=args.filename,
        extension=args.extension,
        sync_immediately=args.sync_immediately,
    )
    return InboxPutOutput(path=path, synced=synced)
