"""Builds the workflow service on the configured storage (the one place adapters are chosen).

In AWS (`storage = "dynamodb"` with a dispatch queue configured) executions run on Step
Functions; otherwise (the embedded default, the tests) the service drives them itself.
"""

from __future__ import annotations

from shared import runtime
from shared.config import names
from shared.orchestrator.tasks.wiring import build_task_store
from shared.workflows.ports import StateMachines, WorkflowStore
from shared.workflows.service import WorkflowService


def build_workflow_store() -> WorkflowStore:
    if runtime.settings().storage == "sqlite":
        from shared.workflows.adapters.sqlite import SqliteWorkflowStore

        return SqliteWorkflowStore(runtime.database())
    from shared.workflows.adapters.dynamodb import DynamoWorkflowStore

    return DynamoWorkflowStore(runtime.table(names.TABLE_COORDINATION))


def build_state_machines() -> StateMachines | None:
    """Step Functions when the deployment names its dispatch queue, else None (embedded)."""
    settings = runtime.settings()
    if settings.storage == "sqlite" or not settings.workflow_queue_url:
        return None
    from shared.workflows.adapters.stepfunctions import StepFunctionsMachines

    return StepFunctionsMachines.from_settings(settings)


@runtime.cached
def build_workflow_service() -> WorkflowService:
    return WorkflowService(build_workflow_store(), build_task_store(), build_state_machines())
