"""The workflows tool group: seed 000's eight workflow.* tools.

Scopes are seed 000's: workflow.create for create, workflow.manage for start, pause, resume and
cancel, workflow.read for status, get and list.
"""

from __future__ import annotations

from shared.tools.registry import APPEND, READ_ONLY, Annotations, ToolContext
from shared.workflows.group import GROUP
from shared.workflows.models import (
    WorkflowCreateInput,
    WorkflowIdInput,
    WorkflowListInput,
    WorkflowListOutput,
    WorkflowOutput,
    WorkflowStartInput,
)
from shared.workflows.service import WorkflowService

# Cancel ends an execution for good and cancels its open tasks.
DESTRUCTIVE = Annotations(read_only=False, destructive=True, idempotent=False, open_world=False)


@GROUP.tool(
    name="workflow.create",
    title="Create a workflow",
    description="Create a workflow: a DAG of steps, each run as an agent task once the steps it "
    "depends_on have finished. Step inputs may refer to ${inputs.<key>} and "
    "${steps.<name>.output|artifact|task_id|agent|status|error}. on_failure is fail (the "
    "workflow fails), continue, or retry (max_retries more tasks). Creating a name that exists "
    "adds a new version; running executions keep theirs.",
    scopes=("workflow.create",),
    annotations=APPEND,
)
def workflow_create(ctx: ToolContext[WorkflowService], args: WorkflowCreateInput) -> WorkflowOutput:
    created = ctx.service.create(ctx.principal, **args.model_dump(exclude={"token"}))
    return WorkflowOutput(workflow=created)


@GROUP.tool(
    name="workflow.start",
    title="Start a workflow",
    description="Start a workflow's newest version with these inputs: its first steps become "
    "tasks agents can poll and claim. Refused while an execution is running or paused.",
    scopes=("workflow.manage",),
    annotations=APPEND,
)
def workflow_start(ctx: ToolContext[WorkflowService], args: WorkflowStartInput) -> WorkflowOutput:
    return WorkflowOutput(workflow=ctx.service.start(ctx.principal, args.workflow_id, args.inputs))


@GROUP.tool(
    name="workflow.pause",
    title="Pause a workflow",
    description="Pause a workflow: steps that become ready are held (no task) until resume; "
    "steps already dispatched run on.",
    scopes=("workflow.manage",),
    annotations=APPEND,
)
def workflow_pause(ctx: ToolContext[WorkflowService], args: WorkflowIdInput) -> WorkflowOutput:
    return WorkflowOutput(workflow=ctx.service.pause(ctx.principal, args.workflow_id))


@GROUP.tool(
    name="workflow.resume",
    title="Resume a workflow",
    description="Resume a paused workflow: held steps get their tasks now.",
    scopes=("workflow.manage",),
    annotations=APPEND,
)
def workflow_resume(ctx: ToolContext[WorkflowService], args: WorkflowIdInput) -> WorkflowOutput:
    return WorkflowOutput(workflow=ctx.service.resume(ctx.principal, args.workflow_id))


@GROUP.tool(
    name="workflow.cancel",
    title="Cancel a workflow",
    description="Cancel a workflow's execution: it stops, its open tasks are cancelled and "
    "steps not started are skipped.",
    scopes=("workflow.manage",),
    annotations=DESTRUCTIVE,
)
def workflow_cancel(ctx: ToolContext[WorkflowService], args: WorkflowIdInput) -> WorkflowOutput:
    return WorkflowOutput(workflow=ctx.service.cancel(ctx.principal, args.workflow_id))


# A workflow as the tools return it carries its definition and, once started, its execution:
# status and get are the same read under the seed's two names. One function registered twice
# (the lower decorator registers first, keeping the seed's order).
@GROUP.tool(
    name="workflow.get",
    title="Get a workflow",
    description='Get a workflow\'s definition, version and trigger; {"workflow": null} when '
    "there is none with that id.",
    scopes=("workflow.read",),
    annotations=READ_ONLY,
)
@GROUP.tool(
    name="workflow.status",
    title="Workflow status",
    description="Get workflow status: the newest execution with each step's state, task id, "
    'agent, start and end times, outputs and (in AWS) the console link; {"workflow": null} '
    "when there is no such workflow.",
    scopes=("workflow.read",),
    annotations=READ_ONLY,
)
def workflow_get(ctx: ToolContext[WorkflowService], args: WorkflowIdInput) -> WorkflowOutput:
    return WorkflowOutput(workflow=ctx.service.get(ctx.principal, args.workflow_id))


@GROUP.tool(
    name="workflow.list",
    title="List workflows",
    description="List the team's workflows, newest first, optionally by status (created, "
    "running, paused, completed, failed, cancelled: that of the newest execution).",
    scopes=("workflow.read",),
    annotations=READ_ONLY,
)
def workflow_list(ctx: ToolContext[WorkflowService], args: WorkflowListInput) -> WorkflowListOutput:
    return WorkflowListOutput(
        workflows=ctx.service.list_workflows(ctx.principal, status=args.status, limit=args.limit)
    )
