"""Builds the workflow service on the configured storage (the one place adapters are chosen).

In AWS (`storage = "dynamodb"` with a dispatch queue configured) executions run on Step
Functions; otherwise (the embedded default, the tests) the service drives them itself.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

from shared import runtime
from shared.config import names
from shared.domain_events.wiring import build_domain_events
from shared.orchestrator.tasks.ports import TaskStore
from shared.storage.backends import Adapters
from shared.workflows.engine import EndListener
from shared.workflows.ports import Schedules, StateMachines, WorkflowStore
from shared.workflows.service import WorkflowService

# Set by functions/workflows/handler.py from `context.invoked_function_arn`.
FUNCTION_ARN_ENV = "CAIRN_WORKFLOW_FUNCTION_ARN"


WORKFLOW_STORE = Adapters[WorkflowStore].named(
    sqlite="shared.workflows.adapters.sqlite:SqliteWorkflowStore",
    dynamodb="shared.workflows.adapters.dynamodb:DynamoWorkflowStore",
    table=names.TABLE_COORDINATION,
)


def build_workflow_store() -> WorkflowStore:
    return runtime.backend().build(WORKFLOW_STORE)


def build_state_machines() -> StateMachines | None:
    """Step Functions when the deployment names its dispatch queue, else None (embedded)."""
    settings = runtime.settings()
    if runtime.backend().name == "sqlite" or not settings.workflow_queue_url:
        return None
    from shared.workflows.adapters.stepfunctions import StepFunctionsMachines

    return StepFunctionsMachines.from_settings(settings)


def build_schedules() -> Schedules | None:
    """EventBridge Scheduler when the deployment names the schedule group, else None."""
    settings = runtime.settings()
    if not settings.workflow_schedule_group or not settings.workflow_scheduler_role_arn:
        return None
    import boto3

    from shared.workflows.adapters.scheduler import EventBridgeSchedules

    return EventBridgeSchedules(
        boto3.client("scheduler", region_name=settings.region),
        group=settings.workflow_schedule_group,
        role_arn=settings.workflow_scheduler_role_arn,
        target_arn=own_function_arn,
    )


def restore_schedules(team: str) -> int:
    """Create the schedule of each of `team`'s schedule-triggered workflows: an import writes
    the workflows, and their schedules live outside the tables. How many; 0 without Scheduler."""
    schedules = build_schedules()
    if schedules is None:
        return 0
    store = build_workflow_store()
    restored, cursor = 0, None
    while True:
        page = store.list_team(team, limit=100, cursor=cursor)
        for workflow in page.items:
            if workflow.trigger_type == "schedule":
                schedules.put(team, workflow)
                restored += 1
        if page.next_cursor is None:
            return restored
        cursor = page.next_cursor


def own_function_arn() -> str:
    """The workflows function's ARN: set by its handler from the invocation context."""
    arn = os.environ.get(FUNCTION_ARN_ENV)
    if not arn:
        raise RuntimeError("schedules are created from the workflows function only")
    return arn


def build_schedule_teams() -> Callable[[], list[str]]:
    """The embedded default's worker: the teams whose schedules it fires (all that have one).
    Only the local server calls this; in AWS EventBridge Scheduler fires each schedule."""
    from shared.workflows.adapters.sqlite import SqliteWorkflowStore

    return SqliteWorkflowStore(runtime.database()).schedule_teams


def build_workflow_service(
    tasks: TaskStore, *, on_end: Sequence[EndListener] = ()
) -> WorkflowService:
    """The workflow service, whose steps are tasks of `tasks` (the orchestrator's store);
    `on_end` runs when an execution ends. The composition root (`shared.app.reactions`) passes
    both: the store, and recording the execution as a knowledge event."""
    service = WorkflowService(
        build_workflow_store(),
        tasks,
        build_state_machines(),
        schedules=build_schedules(),
        events=build_domain_events(),
    )
    for reaction in on_end:
        service.on_end(reaction)
    return service
