"""Builds the sync state on the configured storage (the one place its adapter is chosen)."""

from __future__ import annotations

from shared import runtime
from shared.config import names
from shared.sync.ports import SyncState


def build_sync_state() -> SyncState:
    if runtime.settings().storage == "sqlite":
        from shared.sync.adapters.sqlite import SqliteSyncState

        return SqliteSyncState(runtime.database())
    from shared.sync.adapters.dynamodb import DynamoSyncState

    return DynamoSyncState(runtime.table(names.TABLE_SYNC))
