"""Builds the sessions group's store, model catalog and service (the one place its adapters
are chosen)."""

from __future__ import annotations

from pathlib import Path

from shared import runtime
from shared.config import names
from shared.memory.service import MemoryService
from shared.sessions.ports import ModelCatalog, SessionStore
from shared.sessions.service import SessionService
from shared.storage.backends import Adapters

SESSION_STORE = Adapters[SessionStore].named(
    sqlite="shared.sessions.adapters.sqlite:SqliteSessionStore",
    dynamodb="shared.sessions.adapters.dynamodb:DynamoSessionStore",
    table=names.TABLE_SESSIONS,
)


def build_session_store() -> SessionStore:
    """The sessions of the configured storage: SQLite in the data folder, or DynamoDB."""
    return runtime.backend().build(SESSION_STORE)


@runtime.cached
def build_model_catalog() -> ModelCatalog:
    """Bedrock's foundation models (`model_catalog = "bedrock"`, set in AWS), a configured
    JSON file, or the catalog shipped with cairn."""
    configured = runtime.settings().model_catalog
    if configured == "bedrock":
        import boto3

        from shared.sessions.adapters.catalog import BedrockModelCatalog

        return BedrockModelCatalog(boto3.client("bedrock", region_name=runtime.settings().region))
    from shared.sessions.adapters.catalog import SHIPPED_CATALOG, FileModelCatalog

    return FileModelCatalog(Path(configured) if configured else SHIPPED_CATALOG)


def build_session_service(memory: MemoryService) -> SessionService:
    """The sessions group's service; its engrams are memories of `memory` (the composition
    root, `shared.app.wiring`, passes the memory group's service)."""
    from shared.sessions.adapters.memory import MemoryEngrams

    return SessionService(build_session_store(), MemoryEngrams(memory), build_model_catalog)
