"""The definition → ASL compiler: levels as Parallel states, callbacks, Catch and timeouts."""

from __future__ import annotations

from shared.workflows.asl import CALLBACK_RESOURCE, compile_definition
from shared.workflows.definition import levels, parse_definition

QUEUE = "https://sqs.us-east-1.amazonaws.com/123456789012/dispatch"


def test_independent_steps_share_a_level_and_levels_run_in_order() -> None:
    definition = parse_definition(
        {
            "steps": [
                {"name": "plan"},
                {"name": "left", "depends_on": ["plan"]},
                {"name": "right", "depends_on": ["plan"]},
                {"name": "solo"},
                {"name": "join", "depends_on": ["left", "right"]},
            ]
        }
    )
    assert levels(definition) == [["plan", "solo"], ["left", "right"], ["join"]]

    asl = compile_definition(definition, queue_url=QUEUE)

    assert asl["StartAt"] == "level 0"
    assert asl["States"]["level 0"]["Next"] == "level 1"
    assert asl["States"]["level 2"]["End"] is True
    branches = asl["States"]["level 1"]["Branches"]
    assert [b["StartAt"] for b in branches] == ["left", "right"]
    assert all(s["ResultPath"] is None for s in asl["States"].values())


def test_each_step_waits_on_a_callback_through_the_dispatch_queue() -> None:
    definition = parse_definition({"steps": [{"name": "a", "timeout_seconds": 120}]})
    task = compile_definition(definition, queue_url=QUEUE)["States"]["level 0"]["Branches"][0][
        "States"
    ]["a"]

    assert task["Resource"] == CALLBACK_RESOURCE
    assert task["Parameters"]["QueueUrl"] == QUEUE
    assert task["Parameters"]["MessageBody"] == {
        "team.$": "$.team",
        "execution_id.$": "$.execution_id",
        "step": "a",
        "task_token.$": "$$.Task.Token",
    }
    assert task["TimeoutSeconds"] == 120
    assert "Catch" not in task  # on_failure fail: the error fails the level and the machine


def test_continue_catches_into_a_pass_and_retry_widens_the_timeout() -> None:
    definition = parse_definition(
        {
            "steps": [
                {"name": "soft", "on_failure": "continue"},
                {"name": "flaky", "on_failure": "retry", "max_retries": 3, "timeout_seconds": 60},
            ]
        }
    )
    branches = compile_definition(definition, queue_url=QUEUE)["States"]["level 0"]["Branches"]
    soft, flaky = branches[0]["States"], branches[1]["States"]

    assert soft["soft"]["Catch"] == [
        {"ErrorEquals": ["States.ALL"], "ResultPath": None, "Next": "soft continued"}
    ]
    assert soft["soft continued"] == {"Type": "Pass", "End": True}
    # Retries are new tasks on the same token: the state's bound covers every attempt.
    assert flaky["flaky"]["TimeoutSeconds"] == 240
    assert "Retry" not in flaky["flaky"]
