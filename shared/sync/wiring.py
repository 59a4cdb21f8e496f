"""Builds the sync group's state, inbox and service on the configured storage (the one place
its adapters are chosen and its service is built)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING

from shared import runtime
from shared.config import names
from shared.memory.ports import MemoryStore
from shared.memory.service import MemoryService
from shared.search.service import SearchService
from shared.storage.backends import Adapters
from shared.sync.ports import Inbox, RunLauncher, ScheduleBook, SyncState
from shared.sync.service import SyncService

if TYPE_CHECKING:
    from shared.sync.adapters.sqlite import SqliteScheduleBook


SYNC_STATE = Adapters[SyncState].named(
    sqlite="shared.sync.adapters.sqlite:SqliteSyncState",
    dynamodb="shared.sync.adapters.dynamodb:DynamoSyncState",
    table=names.TABLE_SYNC,
)


def build_sync_state() -> SyncState:
    """The sync state of the process's storage backend: SQLite in the data folder, or DynamoDB."""
    return runtime.backend().build(SYNC_STATE)


def build_inbox() -> Inbox:
    """The inbox folder in local mode with a data folder; the artifacts bucket elsewhere."""
    settings = runtime.settings()
    if settings.is_local and settings.data_dir is not None:
        from shared.sync.adapters.inbox import FolderInbox

        return FolderInbox(settings.data_dir / "inbox")
    import boto3

    from shared.sync.adapters.inbox import S3Inbox

    return S3Inbox(boto3.client("s3", region_name=settings.region), settings.artifacts_bucket)


def build_run_launcher(sync: Callable[[], SyncService]) -> RunLauncher:
    """How a background run starts: an asynchronous invoke of the sync runner when the stack
    names it (`sync_runner_arn`), else a worker thread of this process (local mode, tests),
    stopped before the database closes."""
    settings = runtime.settings()
    if settings.sync_runner_arn:
        import boto3

        from shared.sync.runs import LambdaRunLauncher

        client = boto3.client("lambda", region_name=settings.region)
        return LambdaRunLauncher(client, settings.sync_runner_arn)
    from shared.sync.runs import ThreadRunLauncher

    launcher = ThreadRunLauncher(
        lambda team, run_id, interrupted: sync().runs.execute(team, run_id, interrupted)
    )
    runtime.on_reconfigure(launcher.stop)
    return launcher


@runtime.cached
def build_local_schedules() -> SqliteScheduleBook:
    """The embedded default's team schedules (fired by `LocalSyncScheduler`)."""
    from shared.sync.adapters.sqlite import SqliteScheduleBook

    return SqliteScheduleBook(runtime.database())


def build_schedule_book() -> ScheduleBook:
    """EventBridge Scheduler when the stack names its sync schedule group; the database in
    local mode."""
    settings = runtime.settings()
    if settings.sync_schedule_group:
        import boto3

        from shared.sync.schedules import ScheduleTarget, SyncSchedules

        if not (settings.sync_runner_arn and settings.sync_scheduler_role_arn):
            raise RuntimeError("the sync schedule group needs the runner and scheduler role too")
        target = ScheduleTarget(
            settings.sync_schedule_group, settings.sync_runner_arn, settings.sync_scheduler_role_arn
        )
        return SyncSchedules(boto3.client("scheduler", region_name=settings.region), target)
    return build_local_schedules()


def build_sync_service(
    *,
    search: SearchService,
    memory: MemoryService,
    memory_store: MemoryStore,
    sync: Callable[[], SyncService],
) -> SyncService:
    """The sync group's service on the search and memory groups' (the composition root,
    `shared.app.sync_service`, passes them, and `sync`: the service as it builds it, which a
    background run executes on)."""
    settings = runtime.settings()
    schedules = (
        build_schedule_book
        if settings.sync_schedule_group or runtime.backend().name == "sqlite"
        else None
    )
    return SyncService(
        search,
        memory,
        build_sync_state(),
        build_inbox(),
        memory_store=memory_store,
        # Built at the first background run, once per service.
        launcher=functools.cache(lambda: build_run_launcher(sync)),
        schedules=schedules,
    )
