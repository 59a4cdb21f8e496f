"""Builds the sync group's state, inbox and service on the configured storage (the one place
its adapters are chosen and its service is built)."""

from __future__ import annotations

from shared import runtime
from shared.config import names
from shared.memory.wiring import build_memory_service
from shared.search.wiring import build_search_service
from shared.sync.ports import Inbox, SyncState
from shared.sync.service import SyncService


def build_sync_state() -> SyncState:
    """The sync state of `runtime.settings().storage`: SQLite in the data folder, or DynamoDB."""
    if runtime.settings().storage == "sqlite":
        from shared.sync.adapters.sqlite import SqliteSyncState

        return SqliteSyncState(runtime.database())
    from shared.sync.adapters.dynamodb import DynamoSyncState

    return DynamoSyncState(runtime.table(names.TABLE_SYNC))


def build_inbox() -> Inbox:
    """The inbox folder in local mode with a data folder; the artifacts bucket elsewhere."""
    settings = runtime.settings()
    if settings.is_local and settings.data_dir is not None:
        from shared.sync.adapters.inbox import FolderInbox

        return FolderInbox(settings.data_dir / "inbox")
    import boto3

    from shared.sync.adapters.inbox import S3Inbox

    return S3Inbox(boto3.client("s3", region_name=settings.region), settings.artifacts_bucket)


@runtime.cached
def build_sync_service() -> SyncService:
    """The sync group's service (on the search and memory services), built once per process."""
    return SyncService(
        build_search_service(), build_memory_service(), build_sync_state(), build_inbox()
    )
