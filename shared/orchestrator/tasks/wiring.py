"""Builds the task store and service on the configured storage (the one place adapters are
chosen)."""

from __future__ import annotations

from shared import runtime
from shared.config import names
from shared.domain_events.wiring import build_domain_events
from shared.orchestrator.ports import AgentDirectory
from shared.orchestrator.tasks.ports import TaskStore
from shared.orchestrator.tasks.service import TaskService
from shared.storage.backends import Adapters

TASK_STORE = Adapters[TaskStore].named(
    sqlite="shared.orchestrator.tasks.adapters.sqlite:SqliteTaskStore",
    dynamodb="shared.orchestrator.tasks.adapters.dynamodb:DynamoTaskStore",
    table=names.TABLE_COORDINATION,
)


def build_task_store() -> TaskStore:
    """The task store of the process's storage backend: also the artifact service's `TaskLookup`."""
    return runtime.backend().build(TASK_STORE)


def build_task_service(agents: AgentDirectory) -> TaskService:
    return TaskService(build_task_store(), agents, events=build_domain_events())
