"""The sync tool group: seed 000's sync, sync_status, sync_run, embeddings_build and inbox_put,
and cairn's own sync_schedule_set / sync_schedule_get / sync_schedule_delete (a team's
schedule, or one per connector)."""

from __future__ import annotations

from shared.sync.group import GROUP
from shared.sync.models import (
    EmbeddingsBuildInput,
    EmbeddingsBuildOutput,
    InboxPutInput,
    InboxPutOutput,
    ScheduleDeleteOutput,
    ScheduleGetInput,
    ScheduleOutput,
    ScheduleSetInput,
    SyncInput,
    SyncOutput,
    SyncStatusInput,
    SyncStatusOutput,
)
from shared.sync.service import SyncService
from shared.tools.registry import APPEND, READ_ONLY, Annotations, ToolContext

# On a large team sync, sync_run and embeddings_build wait for a background run.
_LARGE = (
    " On a large team the work runs in the background, waited for up to 18 s: the answer "
    "carries `run` (its run_id and state); if it is still running, the counts are so far "
    "(a sync's connector says success false) and sync_status reports the end."
)

# Re-running a sync with nothing new changes nothing; it mirrors deletions made in the inbox.
_SYNC = Annotations(read_only=False, destructive=False, idempotent=True, open_world=False)


@GROUP.tool(
    name="sync",
    title="Run sync",
    description="Run sync for enabled connectors with a lock to prevent concurrent runs. "
    'Returns each connector\'s result and the expired memories pruned, or {"skipped": true, '
    '"reason": "lock"} while another sync of the team runs.' + _LARGE,
    scopes=("sync",),
    annotations=_SYNC,
)
def sync(ctx: ToolContext[SyncService], args: SyncInput) -> SyncOutput:
    return ctx.service.sync(ctx.principal, source=args.source, lock=True)


@GROUP.tool(
    name="sync_run",
    title="Run sync without lock",
    description="Run sync without lock (advanced): the same work as sync, even while another "
    "sync of the team holds the lock." + _LARGE,
    scopes=("sync",),
    annotations=_SYNC,
)
def sync_run(ctx: ToolContext[SyncService], args: SyncInput) -> SyncOutput:
    return ctx.service.sync(ctx.principal, source=args.source, lock=False)


@GROUP.tool(
    name="sync_status",
    title="Sync status",
    description="Get connector sync status: each connector and document source of the team "
    "with its live entity count and last sync time, and the team's recent background runs "
    "(state, phase, done/total, started/finished, error), or the one run_id names.",
    scopes=("sync",),
    annotations=READ_ONLY,
)
def sync_status(ctx: ToolContext[SyncService], args: SyncStatusInput) -> SyncStatusOutput:
    return ctx.service.status_report(ctx.principal, args.run_id)


@GROUP.tool(
    name="embeddings_build",
    title="Rebuild the search index",
    description="Rebuild the team's search index (chunks and embeddings) from the stored "
    "documents, optionally for one source, and (without a source) the team's memories. "
    "Unchanged text reuses cached embeddings. Returns the number of chunks indexed." + _LARGE,
    scopes=("sync",),
    # Rewrites derived index entries only (never a user's data); the same call converges to
    # the same index.
    annotations=_SYNC,
)
def embeddings_build(
    ctx: ToolContext[SyncService], args: EmbeddingsBuildInput
) -> EmbeddingsBuildOutput:
    total, run = ctx.service.embeddings_build(ctx.principal, source=args.source)
    return EmbeddingsBuildOutput(total=total, run=run)


@GROUP.tool(
    name="sync_schedule_set",
    title="Schedule the team's sync",
    description="cairn: create or replace your team's sync schedule (or a connector's: "
    "`source`): `every` (15m, 2h, 1d; at least 5m) or `cron` (Scheduler's six fields, UTC, "
    "e.g. '0 6 * * ? *'). Each firing runs the connectors, prunes expired memories and "
    "rebuilds the index.",
    scopes=("sync",),
    # Replaces the team's one schedule: the same call leaves the same schedule.
    annotations=Annotations(read_only=False, destructive=True, idempotent=True, open_world=False),
)
def sync_schedule_set(ctx: ToolContext[SyncService], args: ScheduleSetInput) -> ScheduleOutput:
    return ScheduleOutput(
        schedule=ctx.service.schedule_set(
            ctx.principal, every=args.every, cron=args.cron, source=args.source
        )
    )


@GROUP.tool(
    name="sync_schedule_get",
    title="The team's sync schedule",
    description="cairn: your team's sync schedule (null if none) and its connectors' "
    "(`connectors`), or one connector's (`source`).",
    scopes=("sync",),
    annotations=READ_ONLY,
)
def sync_schedule_get(ctx: ToolContext[SyncService], args: ScheduleGetInput) -> ScheduleOutput:
    schedule, connectors = ctx.service.schedule_get(ctx.principal, args.source)
    return ScheduleOutput(schedule=schedule, connectors=connectors)


@GROUP.tool(
    name="sync_schedule_delete",
    title="Unschedule the team's sync",
    description="cairn: delete your team's (or a connector's) sync schedule; `deleted` is "
    "false when there was none.",
    scopes=("sync",),
    annotations=Annotations(read_only=False, destructive=True, idempotent=True, open_world=False),
)
def sync_schedule_delete(
    ctx: ToolContext[SyncService], args: ScheduleGetInput
) -> ScheduleDeleteOutput:
    return ScheduleDeleteOutput(deleted=ctx.service.schedule_delete(ctx.principal, args.source))


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
