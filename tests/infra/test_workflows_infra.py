"""The workflow machinery in the stack: the machine role, the dispatcher and its queue, each
function's Step Functions reach, alarms and dashboard widgets."""

from __future__ import annotations

import json
from typing import Any

import pytest

from infra.workflows import CALLBACK_ACTIONS, DISPATCH_BATCH_SIZE, DISPATCH_MAX_RECEIVES
from shared.config import names
from shared.config.names import Env
from tests.infra.support import Synth

pytestmark = pytest.mark.infra

DISPATCHER = names.WORKER_WORKFLOW_DISPATCHER


def _actions(statements: list[dict[str, Any]]) -> set[str]:
    found: set[str] = set()
    for statement in statements:
        action = statement["Action"]
        found |= set(action if isinstance(action, list) else [action])
    return found


def _states_actions(synth: Synth, function: str) -> set[str]:
    return {a for a in _actions(synth.statements_of(function)) if a.startswith("states:")}


def test_compiled_machines_run_under_a_role_that_may_only_send_to_the_dispatch_queue(
    synth: Synth,
) -> None:
    role_id = synth.logical_id(synth.stack.workflows.machine_role)
    role = synth.resources[role_id]["Properties"]
    (trust,) = role["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Principal"] == {"Service": "states.amazonaws.com"}
    statements = [
        s
        for p in synth.of_type("AWS::IAM::Policy").values()
        if {"Ref": role_id} in p["Properties"]["Roles"]
        for s in p["Properties"]["PolicyDocument"]["Statement"]
    ]
    queue = synth.logical_id(synth.stack.workflows.dispatch_queue)
    sqs_actions = {a for a in _actions(statements) if a.startswith("sqs:")}
    assert sqs_actions == {"sqs:SendMessage"}
    assert all(
        queue in json.dumps(s["Resource"])
        for s in statements
        if "sqs:SendMessage" in json.dumps(s["Action"])
    )
    assert not {a for a in _actions(statements) if a.startswith(("states:", "dynamodb:"))}


def test_the_dispatcher_is_fed_by_the_dispatch_queue_and_reports_item_failures(
    synth: Synth,
) -> None:
    queue = synth.logical_id(synth.stack.workflows.dispatch_queue)
    (mapping,) = [
        m["Properties"]
        for m in synth.of_type("AWS::Lambda::EventSourceMapping").values()
        if m["Properties"]["FunctionName"] == {"Ref": synth.functions()[DISPATCHER]}
    ]
    assert mapping["EventSourceArn"] == {"Fn::GetAtt": [queue, "Arn"]}
    assert mapping["BatchSize"] == DISPATCH_BATCH_SIZE
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    redrive = synth.resources[queue]["Properties"]["RedrivePolicy"]
    assert redrive["maxReceiveCount"] == DISPATCH_MAX_RECEIVES
    dead = synth.logical_id(synth.stack.workflows.dead_letter_queue)
    assert redrive["deadLetterTargetArn"] == {"Fn::GetAtt": [dead, "Arn"]}


def test_the_dispatcher_reaches_only_tasks_the_queue_and_the_callback(synth: Synth) -> None:
    statements = synth.statements_of(DISPATCHER)
    services = {a.split(":")[0] for a in _actions(statements)}
    # logs: its own log group, as every function (infra.functions).
    assert services <= {"dynamodb", "sqs", "states", "xray", "kms", "logs"}, services
    assert _states_actions(synth, DISPATCHER) == set(CALLBACK_ACTIONS)
    coordination = synth.logical_id(synth.stack.data.table(names.TABLE_COORDINATION))
    tables = {
        s["Resource"] if isinstance(s["Resource"], str) else json.dumps(s["Resource"])
        for s in statements
        if any(a.startswith("dynamodb:") for a in _actions([s]))
    }
    assert all(coordination in t for t in tables)
    assert {a for a in _actions(statements) if a.startswith("sqs:")} <= {
        "sqs:ReceiveMessage",
        "sqs:ChangeMessageVisibility",
        "sqs:GetQueueUrl",
        "sqs:DeleteMessage",
        "sqs:GetQueueAttributes",
    }


def test_the_orchestrator_answers_callbacks_and_starts_event_triggered_machines(
    synth: Synth,
) -> None:
    assert _states_actions(synth, names.GROUP_ORCHESTRATOR) == _states_actions(
        synth, names.GROUP_WORKFLOWS
    )
    assert set(CALLBACK_ACTIONS) <= _states_actions(synth, names.GROUP_ORCHESTRATOR)


@pytest.mark.parametrize("function", [names.GROUP_WORKFLOWS, names.GROUP_ORCHESTRATOR])
def test_the_functions_that_start_workflows_run_only_the_stacks_machines(
    synth: Synth, function: str
) -> None:
    prefix = synth.stack.workflows.machine_prefix
    statements = synth.statements_of(function)
    for statement in statements:
        actions = _actions([statement])
        if actions & {"states:CreateStateMachine", "states:StartExecution"}:
            assert f"stateMachine:{prefix}-*" in json.dumps(statement["Resource"])
        if "states:StopExecution" in actions:
            assert f"execution:{prefix}-*:*" in json.dumps(statement["Resource"])
        if "iam:PassRole" in actions:
            # The machine role to Step Functions; the scheduler role (workflows only) to
            # EventBridge Scheduler; nothing else, to nobody else.
            machines = synth.logical_id(synth.stack.workflows.machine_role)
            schedules = synth.logical_id(synth.stack.workflows.scheduler_role)
            (role, _) = statement["Resource"]["Fn::GetAtt"]
            service = {machines: "states", schedules: "scheduler"}[role]
            assert statement["Condition"] == {
                "StringEquals": {"iam:PassedToService": f"{service}.amazonaws.com"}
            }
    assert "iam:PassRole" in _actions(statements)


def test_the_functions_that_drive_workflows_know_the_queue_role_and_prefix(synth: Synth) -> None:
    for function in (names.GROUP_WORKFLOWS, names.GROUP_ORCHESTRATOR, DISPATCHER):
        variables = synth.resources[synth.functions()[function]]["Properties"]["Environment"][
            "Variables"
        ]
        for key in (
            Env.WORKFLOW_QUEUE_URL,
            Env.WORKFLOW_ROLE_ARN,
            Env.WORKFLOW_MACHINE_PREFIX,
            Env.WORKFLOW_LOG_GROUP_ARN,
        ):
            assert key in variables, (function, key)


def _alarm_on(synth: Synth, fragment: str) -> bool:
    return any(
        fragment in json.dumps(alarm["Properties"])
        for alarm in synth.of_type("AWS::CloudWatch::Alarm").values()
    )


def test_the_queue_its_dead_letters_the_dispatcher_and_the_machines_are_alarmed(
    synth: Synth,
) -> None:
    dead = synth.logical_id(synth.stack.workflows.dead_letter_queue)
    queue = synth.logical_id(synth.stack.workflows.dispatch_queue)
    assert _alarm_on(synth, dead)
    assert _alarm_on(synth, "ApproximateAgeOfOldestMessage")
    assert _alarm_on(synth, queue)
    assert _alarm_on(synth, synth.functions()[DISPATCHER])
    (rule,) = [
        r["Properties"]
        for r in synth.of_type("AWS::Events::Rule").values()
        if "Step Functions Execution Status Change" in json.dumps(r["Properties"])
    ]
    assert rule["EventPattern"]["detail"]["status"] == ["FAILED", "TIMED_OUT"]
    assert _alarm_on(synth, "MatchedEvents")


def test_the_dashboard_shows_executions_started_failed_and_timed_out(synth: Synth) -> None:
    (dashboard,) = synth.of_type("AWS::CloudWatch::Dashboard").values()
    body = json.dumps(dashboard["Properties"]["DashboardBody"])
    for metric in ("ExecutionsStarted", "ExecutionsFailed", "ExecutionsTimedOut"):
        assert metric in body
    assert synth.stack.workflows.machine_prefix in body


def test_schedule_triggers_run_under_a_scheduler_role_that_may_only_invoke_workflows(
    synth: Synth,
) -> None:
    workflows = synth.stack.workflows
    role_id = synth.logical_id(workflows.scheduler_role)
    (trust,) = synth.resources[role_id]["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Principal"] == {"Service": "scheduler.amazonaws.com"}
    assert "aws:SourceArn" in json.dumps(trust["Condition"])
    statements = [
        s
        for p in synth.of_type("AWS::IAM::Policy").values()
        if {"Ref": role_id} in p["Properties"]["Roles"]
        for s in p["Properties"]["PolicyDocument"]["Statement"]
    ]
    assert _actions(statements) == {"lambda:InvokeFunction"}
    target = synth.functions()[names.GROUP_WORKFLOWS]
    assert all(target in json.dumps(s["Resource"]) for s in statements)


def test_only_the_workflows_function_manages_schedules_in_its_group(synth: Synth) -> None:
    group = synth.stack.workflows.schedule_group_name
    for function in synth.functions():
        # The sync group manages its own sync-* schedules in another group (test_sync_runner_infra).
        scheduler = [
            s
            for s in synth.statements_of(function)
            if "scheduler:" in json.dumps(s["Action"]) and f"/{group}/" in json.dumps(s["Resource"])
        ]
        if function != names.GROUP_WORKFLOWS:
            assert scheduler == [], function
            continue
        (statement,) = scheduler
        assert f"schedule/{group}/*" in json.dumps(statement["Resource"])
        assert "scheduler:CreateSchedule" in statement["Action"]
    variables = synth.resources[synth.functions()[names.GROUP_WORKFLOWS]]["Properties"][
        "Environment"
    ]["Variables"]
    assert variables[Env.WORKFLOW_SCHEDULE_GROUP] == group


def test_the_stack_names_what_workflow_schedules_invoke_for_an_import(synth: Synth) -> None:
    # `cairn import --stack` re-creates a team's workflow schedules from these outputs.
    outputs = synth.document["Outputs"]
    function = synth.functions()[names.GROUP_WORKFLOWS]
    assert outputs[names.Outputs.WORKFLOWS_FUNCTION_ARN]["Value"] == {
        "Fn::GetAtt": [function, "Arn"]
    }
    role = synth.logical_id(synth.stack.workflows.scheduler_role)
    assert outputs[names.Outputs.WORKFLOW_SCHEDULER_ROLE_ARN]["Value"] == {
        "Fn::GetAtt": [role, "Arn"]
    }
