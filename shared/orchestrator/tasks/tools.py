"""Seed 000's task.* tools on the orchestrator group."""

from __future__ import annotations

from shared.orchestrator.group import GROUP
from shared.orchestrator.service import Orchestrator
from shared.orchestrator.tasks.models import (
    SuccessOutput,
    Task,
    TaskCancelInput,
    TaskCompleteInput,
    TaskCreateInput,
    TaskDelegateInput,
    TaskFailInput,
    TaskIdInput,
    TaskListInput,
    TaskListOutput,
    TaskOutput,
    TaskPollInput,
)
from shared.tools.registry import APPEND, READ_ONLY, ToolContext

# Each call creates a new task: not idempotent; nothing existing changes.
CREATE = APPEND
# A transition succeeds once; repeating it is refused (409), so not idempotent.
TRANSITION = APPEND


@GROUP.tool(
    name="task.create",
    title="Create a task",
    description="Create a standalone task. It waits in the team's queue until an agent "
    "claims it; requires_capability limits who may, depends_on holds it until those tasks "
    "complete, and higher priority is polled first.",
    scopes=("task.create",),
    annotations=CREATE,
)
def task_create(ctx: ToolContext[Orchestrator], args: TaskCreateInput) -> Task:
    return ctx.service.tasks.create(
        ctx.principal, **args.model_dump(exclude={"token"}, exclude_unset=True)
    )


@GROUP.tool(
    name="task.poll",
    title="Poll for tasks",
    description="Poll for available tasks: the ones the caller could claim now (pending or "
    "with an expired lease, its capability held, dependencies complete), highest priority "
    "then oldest first. Polling claims nothing.",
    scopes=("task.claim",),
    annotations=READ_ONLY,
)
def task_poll(ctx: ToolContext[Orchestrator], args: TaskPollInput) -> TaskListOutput:
    return TaskListOutput(tasks=ctx.service.tasks.poll(ctx.principal, limit=args.limit))


@GROUP.tool(
    name="task.claim",
    title="Claim a task",
    description="Claim a task: one atomic write gives the caller a 15-minute lease. A lost "
    "race is an error naming who holds the claim and until when.",
    scopes=("task.claim",),
    annotations=TRANSITION,
)
def task_claim(ctx: ToolContext[Orchestrator], args: TaskIdInput) -> TaskOutput:
    return TaskOutput(task=ctx.service.tasks.claim(ctx.principal, args.task_id))


@GROUP.tool(
    name="task.start",
    title="Start a task",
    description="Start a claimed task (renews the lease).",
    scopes=("task.execute",),
    annotations=TRANSITION,
)
def task_start(ctx: ToolContext[Orchestrator], args: TaskIdInput) -> SuccessOutput:
    ctx.service.tasks.start(ctx.principal, args.task_id)
    return SuccessOutput()


@GROUP.tool(
    name="task.complete",
    title="Complete a task",
    description="Complete a task the caller holds. Refused if another agent claimed it "
    "after the caller's lease ran out.",
    scopes=("task.execute",),
    annotations=TRANSITION,
)
def task_complete(ctx: ToolContext[Orchestrator], args: TaskCompleteInput) -> SuccessOutput:
    outcome = args.model_dump(exclude={"token", "task_id"})
    ctx.service.tasks.finish(ctx.principal, args.task_id, "completed", outcome)
    return SuccessOutput()


@GROUP.tool(
    name="task.fail",
    title="Fail a task",
    description="Fail a task the caller holds, with an error message.",
    scopes=("task.execute",),
    annotations=TRANSITION,
)
def task_fail(ctx: ToolContext[Orchestrator], args: TaskFailInput) -> SuccessOutput:
    outcome = {"error_message": args.error_message}
    ctx.service.tasks.finish(ctx.principal, args.task_id, "failed", outcome)
    return SuccessOutput()


@GROUP.tool(
    name="task.cancel",
    title="Cancel a task",
    description="Cancel an open task (pending, claimed or running).",
    scopes=("task.manage",),
    annotations=TRANSITION,
)
def task_cancel(ctx: ToolContext[Orchestrator], args: TaskCancelInput) -> SuccessOutput:
    ctx.service.tasks.cancel(ctx.principal, args.task_id, args.reason)
    return SuccessOutput()


@GROUP.tool(
    name="task.delegate",
    title="Delegate a task",
    description="Delegate a task: create a sub-task of parent_task_id in its workflow.",
    scopes=("task.create",),
    annotations=CREATE,
)
def task_delegate(ctx: ToolContext[Orchestrator], args: TaskDelegateInput) -> Task:
    return ctx.service.tasks.delegate(ctx.principal, args)


@GROUP.tool(
    name="task.get",
    title="Get a task",
    description='Get task details; {"task": null} when there is none with that id.',
    scopes=("task.read",),
    annotations=READ_ONLY,
)
def task_get(ctx: ToolContext[Orchestrator], args: TaskIdInput) -> TaskOutput:
    return TaskOutput(task=ctx.service.tasks.get(ctx.principal, args.task_id))


@GROUP.tool(
    name="task.list",
    title="List tasks",
    description="List tasks, newest first, by status, workflow or claiming agent.",
    scopes=("task.read",),
    annotations=READ_ONLY,
)
def task_list(ctx: ToolContext[Orchestrator], args: TaskListInput) -> TaskListOutput:
    return TaskListOutput(tasks=ctx.service.tasks.list_tasks(ctx.principal, args))
