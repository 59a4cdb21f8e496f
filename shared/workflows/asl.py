"""Compiling a definition to Amazon States Language (Standard).

The machine is control flow only: the steps' data (inputs, outputs) stays in the workflow
store, so no payload nears Step Functions' 256 KiB limit. Shape:

- steps are grouped into levels by their longest dependency path (`definition.levels`); each
  level is one `Parallel` state whose branches are its steps, and levels run in order. Steps of
  one level never depend on each other, so independent steps run at once; a step waits for its
  whole previous level, which is at most as long as its slowest dependency chain.
- each step is a `Task` on `sqs:sendMessage.waitForTaskToken`: the message (team, execution,
  step, token) goes to the dispatch queue, whose worker creates the agent task; the state waits
  until `task.complete` / `task.fail` send the token back.
- `TimeoutSeconds` is the step's timeout times its attempts (retries are new tasks on the same
  token, decided by the service exactly as in the embedded driver); a step with
  `on_failure: continue` catches every error into a `Pass` state, so the level goes on.
"""

from __future__ import annotations

from typing import Any

from shared.workflows.definition import levels
from shared.workflows.models import StepDefinition, WorkflowDefinition

CALLBACK_RESOURCE = "arn:aws:states:::sqs:sendMessage.waitForTaskToken"


def level_state(index: int) -> str:
    # A space cannot occur in a step name, so these never collide with a step's state.
    return f"level {index}"


def compile_definition(
    definition: WorkflowDefinition, *, queue_url: str, comment: str = ""
) -> dict[str, Any]:
    """The ASL document (as a dict) for `definition`, dispatching through `queue_url`.

    >>> asl = compile_definition(parse_definition({"steps": [{"name": "a"}]}),
    ...                          queue_url="https://sqs/q")  # doctest: +SKIP
    >>> asl["States"]["level 0"]["Type"]  # doctest: +SKIP
    'Parallel'
    """
    grouped = levels(definition)
    states: dict[str, Any] = {}
    for index, names in enumerate(grouped):
        state: dict[str, Any] = {
            "Type": "Parallel",
            "Branches": [_branch(definition.step(name), queue_url) for name in names],
            # Keep the execution's input (team, execution id) for the next level.
            "ResultPath": None,
        }
        if index + 1 < len(grouped):
            state["Next"] = level_state(index + 1)
        else:
            state["End"] = True
        states[level_state(index)] = state
    document: dict[str, Any] = {"StartAt": level_state(0), "States": states}
    if comment:
        document["Comment"] = comment
    return document


def _branch(step: StepDefinition, queue_url: str) -> dict[str, Any]:
    attempts = 1 + (step.max_retries if step.on_failure == "retry" else 0)
    task: dict[str, Any] = {
        "Type": "Task",
        "Resource": CALLBACK_RESOURCE,
        "Parameters": {
            "QueueUrl": queue_url,
            "MessageBody": {
                "team.$": "$.team",
                "execution_id.$": "$.execution_id",
                "step": step.name,
                "task_token.$": "$$.Task.Token",
            },
        },
        "TimeoutSeconds": step.timeout_seconds * attempts,
        "ResultPath": None,
        "End": True,
    }
    states: dict[str, Any] = {step.name: task}
    if step.on_failure == "continue":
        caught = f"{step.name} continued"
        task["Catch"] = [{"ErrorEquals": ["States.ALL"], "ResultPath": None, "Next": caught}]
        states[caught] = {"Type": "Pass", "End": True}
    return {"StartAt": step.name, "States": states}
