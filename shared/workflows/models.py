"""Workflows (seed 000's workflow.* tools): the definition, the records and the tool models.

A workflow is a named, versioned DAG of steps; an execution runs one version of it. Each step of
an execution becomes an agent task (`shared.orchestrator.tasks`), so who runs a step is decided by
the task's lease, never by the workflow.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from shared.tools.inputs import SeedToolInput

# Limits checked at create time (docs/workflows.md): a definition stays small enough to compile
# to one state machine well inside Step Functions' 1 MiB definition and 256 KiB payload limits.
MAX_STEPS = 50
MAX_DEPENDENCIES = 20
MAX_RETRIES = 10
MIN_STEP_TIMEOUT = 60
MAX_STEP_TIMEOUT = 7 * 24 * 3600
DEFAULT_STEP_TIMEOUT = 3600
STEP_NAME_PATTERN = r"^[A-Za-z][A-Za-z0-9_-]{0,63}$"

OnFailure = Literal["fail", "continue", "retry"]
TriggerType = Literal["manual", "schedule", "event"]
ExecutionStatus = Literal["running", "paused", "completed", "failed", "cancelled"]
# `created`: never started. Otherwise the status of the workflow's newest execution.
WorkflowStatus = Literal["created", "running", "paused", "completed", "failed", "cancelled"]
StepStatus = Literal[
    "waiting",  # dependencies not done yet
    "held",  # ready, but the execution is paused: no task until it resumes
    "dispatched",  # its task exists and is open (pending, claimed or running)
    "completed",
    "failed",
    "skipped",  # never ran: the execution failed or was cancelled first
    "cancelled",  # its task was open when the execution was cancelled
]
TERMINAL_STEPS: frozenset[str] = frozenset({"completed", "failed", "skipped", "cancelled"})
OPEN_EXECUTIONS: frozenset[str] = frozenset({"running", "paused"})


class StepDefinition(BaseModel):
    """One step: it becomes an agent task once every step it depends on has finished."""

    model_config = {"extra": "forbid"}

    name: str = Field(pattern=STEP_NAME_PATTERN, description="Unique within the definition.")
    description: str | None = Field(default=None, max_length=10_000)
    requires_capability: str | None = Field(default=None, min_length=1, max_length=128)
    inputs: dict[str, Any] = Field(
        default_factory=dict,
        description="The task's input_data; strings may hold ${inputs.x} and "
        "${steps.<name>.output|artifact|task_id|agent|status} references.",
    )
    depends_on: list[str] = Field(default_factory=list, max_length=MAX_DEPENDENCIES)
    on_failure: OnFailure = "fail"
    max_retries: int = Field(
        default=2, ge=1, le=MAX_RETRIES, description="Extra attempts when on_failure is retry."
    )
    timeout_seconds: int = Field(
        default=DEFAULT_STEP_TIMEOUT, ge=MIN_STEP_TIMEOUT, le=MAX_STEP_TIMEOUT
    )
    priority: int = Field(default=0, ge=-1000, le=1000)


class WorkflowDefinition(BaseModel):
    model_config = {"extra": "forbid"}

    steps: list[StepDefinition] = Field(min_length=1, max_length=MAX_STEPS)

    def step(self, name: str) -> StepDefinition:
        return next(step for step in self.steps if step.name == name)


class Workflow(BaseModel):
    """A workflow: its newest definition version, its trigger, and its newest execution."""

    id: str
    name: str
    description: str | None = None
    version: int = 1
    definition: WorkflowDefinition
    trigger_type: TriggerType = "manual"
    trigger_config: dict[str, Any] = Field(default_factory=dict)
    tags: list[str] = Field(default_factory=list)
    created_by: str
    created_at: datetime
    updated_at: datetime
    current_execution_id: str | None = None
    # Step Functions only: the state machine compiled for `version`.
    state_machine_arn: str | None = None


class StepOutput(BaseModel):
    """What a finished step hands to the steps after it (and what workflow.status shows)."""

    task_id: str | None = None
    agent: str | None = None
    status: str
    output: str | None = None  # the task's output_summary
    artifact: str | None = None  # the task's output_artifact_id
    error: str | None = None


class StepState(BaseModel):
    name: str
    status: StepStatus = "waiting"
    attempt: int = 0  # tasks created for it so far (a retry adds one)
    task_id: str | None = None
    task_ids: list[str] = Field(default_factory=list)  # one per attempt
    agent: str | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None
    deadline: datetime | None = None
    output: str | None = None
    artifact: str | None = None
    error: str | None = None
    # Step Functions only: the callback token of the waiting Task state. Kept here, never in
    # the task an agent reads, so no agent can resume the state machine out of band.
    task_token: str | None = None

    def view(self) -> StepOutput:
        """The state's fields a step's successors and workflow.status see."""
        return StepOutput.model_validate(self, from_attributes=True)


class Execution(BaseModel):
    """One run of one version of a workflow. `revision` orders every write (optimistic)."""

    id: str
    workflow_id: str
    version: int
    definition: WorkflowDefinition  # the version it started with: a new version never alters it
    inputs: dict[str, Any] = Field(default_factory=dict)
    status: ExecutionStatus = "running"
    steps: dict[str, StepState]
    started_by: str
    started_at: datetime
    ended_at: datetime | None = None
    error: str | None = None
    revision: int = 0
    execution_arn: str | None = None
    console_url: str | None = None

    def outputs(self) -> dict[str, StepOutput]:
        return {
            name: state.view()
            for name, state in self.steps.items()
            if state.status in ("completed", "failed")
        }


# ---------------------------------------------------------------- tool inputs and outputs


class WorkflowCreateInput(SeedToolInput):
    name: str = Field(min_length=1, max_length=200, description="Workflow name (unique in team).")
    description: str | None = Field(default=None, max_length=10_000)
    definition: dict[str, Any] = Field(
        description='The DAG: {"steps": [{"name", "requires_capability", "inputs", '
        '"depends_on", "on_failure", "max_retries", "timeout_seconds"}]}. Creating a name that '
        "exists adds a new version."
    )
    trigger_type: TriggerType = "manual"
    trigger_config: dict[str, Any] = Field(default_factory=dict)
    tags: list[str] = Field(default_factory=list, max_length=20)


class WorkflowStartInput(SeedToolInput):
    workflow_id: str = Field(min_length=1, max_length=64)
    inputs: dict[str, Any] = Field(default_factory=dict)


class WorkflowIdInput(SeedToolInput):
    workflow_id: str = Field(min_length=1, max_length=64)


class WorkflowListInput(SeedToolInput):
    status: WorkflowStatus | None = None
    limit: int = Field(default=20, ge=1, le=100)


class StepView(BaseModel):
    name: str
    status: StepStatus
    requires_capability: str | None = None
    depends_on: list[str] = Field(default_factory=list)
    attempt: int = 0
    task_id: str | None = None
    agent: str | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None
    output: str | None = None
    artifact: str | None = None
    error: str | None = None


class ExecutionView(BaseModel):
    id: str
    version: int
    status: ExecutionStatus
    inputs: dict[str, Any]
    started_by: str
    started_at: datetime
    ended_at: datetime | None = None
    error: str | None = None
    steps: list[StepView]
    outputs: dict[str, StepOutput]
    execution_arn: str | None = None
    console_url: str | None = None


class WorkflowView(BaseModel):
    """A workflow as the tools return it: the definition and, when started, its execution."""

    id: str
    name: str
    description: str | None = None
    version: int
    status: WorkflowStatus
    definition: WorkflowDefinition
    trigger_type: TriggerType
    trigger_config: dict[str, Any]
    tags: list[str]
    created_by: str
    created_at: datetime
    updated_at: datetime
    execution: ExecutionView | None = None


class WorkflowOutput(BaseModel):
    workflow: WorkflowView | None


class WorkflowListOutput(BaseModel):
    workflows: list[WorkflowView]
