"""The sync runner: a 15-minute worker with the sync group's reach (and token reads), which only
the sync schedule group's role may start."""

from __future__ import annotations

import json

from shared.config import names
from tests.infra.support import Synth


def test_the_runner_has_fifteen_minutes_and_the_sync_groups_reach(dev: Synth) -> None:
    runner = dev.functions()[names.WORKER_SYNC_RUNNER]
    properties = dev.resources[runner]["Properties"]
    assert properties["Timeout"] == 900
    tokens = dev.logical_id(dev.stack.data.tables[names.TABLE_TOKENS])
    actions = dev.actions_on(names.WORKER_SYNC_RUNNER, tokens)
    assert "dynamodb:Query" in actions
    assert not {a for a in actions if a.startswith("dynamodb:Put") or "Delete" in a}
    sync_table = dev.logical_id(dev.stack.data.tables[names.TABLE_SYNC])
    assert "dynamodb:PutItem" in dev.actions_on(names.WORKER_SYNC_RUNNER, sync_table)


def test_only_the_scheduler_role_may_invoke_the_runner(dev: Synth) -> None:
    runner = dev.functions()[names.WORKER_SYNC_RUNNER]
    role = dev.logical_id(dev.stack.sync.scheduler_role)
    invokers = [
        policy
        for policy in dev.of_type("AWS::IAM::Policy").values()
        if runner in json.dumps(policy["Properties"]["PolicyDocument"])
        and "lambda:InvokeFunction" in json.dumps(policy["Properties"]["PolicyDocument"])
    ]
    sync_group = {"Ref": dev.role_of(names.GROUP_SYNC)}
    # The scheduler role (schedules firing) and the sync group (a large team's background run).
    assert sorted((p["Properties"]["Roles"] for p in invokers), key=json.dumps) == sorted(
        [[{"Ref": role}], [sync_group]], key=json.dumps
    )
    outputs = dev.document["Outputs"]
    assert names.Outputs.SYNC_RUNNER_ARN in outputs
    assert names.Outputs.SYNC_SCHEDULER_ROLE_ARN in outputs


def test_the_sync_group_starts_the_runner_and_manages_only_sync_schedules_of_its_group(
    dev: Synth,
) -> None:
    group = dev.functions()[names.GROUP_SYNC]
    environment = dev.resources[group]["Properties"]["Environment"]["Variables"]
    assert environment[names.Env.SYNC_SCHEDULE_GROUP] == dev.stack.sync.schedule_group_name
    assert names.Env.SYNC_RUNNER_ARN in environment
    assert names.Env.SYNC_SCHEDULER_ROLE_ARN in environment
    statements = dev.statements_of(names.GROUP_SYNC)
    scheduling = [s for s in statements if "scheduler:CreateSchedule" in json.dumps(s["Action"])]
    (schedules,) = scheduling
    assert json.dumps(schedules["Resource"]).endswith(
        f'schedule/{dev.stack.sync.schedule_group_name}/sync-*"]]}}'
    )
    (passing,) = [s for s in statements if s["Action"] == "iam:PassRole"]
    role = dev.logical_id(dev.stack.sync.scheduler_role)
    assert role in json.dumps(passing["Resource"])
    assert passing["Condition"] == {
        "StringEquals": {"iam:PassedToService": "scheduler.amazonaws.com"}
    }
    runner = dev.functions()[names.WORKER_SYNC_RUNNER]
    (config,) = [
        c["Properties"]
        for c in dev.of_type("AWS::Lambda::EventInvokeConfig").values()
        if runner in json.dumps(c["Properties"]["FunctionName"])
    ]
    assert config["MaximumRetryAttempts"] == 0
