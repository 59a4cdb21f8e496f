"""Builds the memory store on the configured storage (the one place its adapter is chosen)."""

from __future__ import annotations

from shared import runtime
from shared.config import names
from shared.memory.ports import MemoryStore


def build_memory_store() -> MemoryStore:
    """The memories of the configured storage: SQLite in the data folder, or DynamoDB."""
    if runtime.settings().storage == "sqlite":
        from shared.memory.adapters.sqlite import SqliteMemoryStore

        return SqliteMemoryStore(runtime.database())
    from shared.memory.adapters.dynamodb import DynamoMemoryStore

    return DynamoMemoryStore(runtime.table(names.TABLE_MEMORIES))
