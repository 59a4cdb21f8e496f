"""The step dispatcher's logic: one queue message from a state machine → `step_ready`.

The compiled ASL sends `{"team", "execution_id", "step", "task_token"}` for every step it reaches
(`shared.workflows.asl`); the message is all the dispatcher needs, so its role reaches only the
coordination table (tasks, executions) and the callback APIs.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from shared.workflows.service import WorkflowService


class StepMessage(BaseModel):
    team: str = Field(min_length=1)
    execution_id: str = Field(min_length=1)
    step: str = Field(min_length=1)
    task_token: str = Field(min_length=1, max_length=2048)


def dispatch(service: WorkflowService, body: str) -> StepMessage:
    """Create the task of the step `body` names (or hold it while paused); returns the message.

    Idempotent: SQS delivers at least once, and a second delivery of the same token is a no-op.
    """
    message = StepMessage.model_validate_json(body)
    service.step_ready(message.team, message.execution_id, message.step, message.task_token)
    return message
