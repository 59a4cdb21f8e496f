"""Builds the task store and service on the configured storage (the one place adapters are
chosen)."""

from __future__ import annotations

from shared import runtime
from shared.config import names
from shared.domain_events.wiring import build_domain_events
from shared.orchestrator.ports import AgentDirectory
from shared.orchestrator.tasks.ports import TaskStore
from shared.orchestrator.tasks.service import TaskService


def build_task_store() -> TaskStore:
    """The task store of `runtime.settings().storage`: also the artifact service's `TaskLookup`."""
    if runtime.settings().storage == "sqlite":
        from shared.orchestrator.tasks.adapters.sqlite import SqliteTaskStore

        return SqliteTaskStore(runtime.database())
    from shared.orchestrator.tasks.adapters.dynamodb import DynamoTaskStore

    return DynamoTaskStore(runtime.table(names.TABLE_COORDINATION))


def build_task_service(agents: AgentDirectory) -> TaskService:
    return TaskService(build_task_store(), agents, events=build_domain_events())
