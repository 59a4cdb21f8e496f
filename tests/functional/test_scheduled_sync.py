"""Scheduled syncs: per-team EventBridge Scheduler schedules (on moto) and the runner they start,
which syncs only the team its own schedule names."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from shared.app.sync_service import build_sync_service
from shared.auth.wiring import build_token_store
from shared.config.settings import Settings
from shared.sync.runner import run_event
from shared.sync.schedules import (
    ScheduleError,
    ScheduleTarget,
    SyncSchedules,
    expression,
    schedule_name,
)
from tests.functional.conftest import Harness

RUNNER = "arn:aws:lambda:us-east-1:123456789012:function:cairn-dev-t-sync-runner"
ROLE = "arn:aws:iam::123456789012:role/cairn-dev-t-scheduler"


@pytest.fixture
def schedules(aws: Settings) -> SyncSchedules:
    client = boto3.client("scheduler", region_name=aws.region)
    client.create_schedule_group(Name="cairn-dev-t-sync")
    return SyncSchedules(client, ScheduleTarget("cairn-dev-t-sync", RUNNER, ROLE))


def test_a_team_schedule_starts_the_runner_with_its_team(schedules: SyncSchedules) -> None:
    schedules.put("alpha", expression(every="15m"))
    schedules.put("beta", expression(cron="0 6 * * ? *"))
    schedules.put("alpha", expression(every="1h"))  # replaces alpha's, never a second one

    listed = schedules.list()

    assert [(s["team"], s["expression"]) for s in listed] == [
        ("alpha", "rate(1 hour)"),
        ("beta", "cron(0 6 * * ? *)"),
    ]
    client = schedules._client
    detail = client.get_schedule(Name="sync-alpha", GroupName="cairn-dev-t-sync")
    assert detail["Target"]["Arn"] == RUNNER
    assert detail["Target"]["RoleArn"] == ROLE
    assert json.loads(detail["Target"]["Input"]) == {"team": "alpha", "schedule": "sync-alpha"}
    assert schedules.delete("alpha") is True
    assert schedules.delete("alpha") is False
    assert [s["team"] for s in schedules.list()] == ["beta"]


@pytest.mark.parametrize(
    ("every", "cron", "message"),
    [
        (None, None, "exactly one"),
        ("15m", "0 6 * * ? *", "exactly one"),
        ("1m", None, "at least 5m"),
        ("soon", None, "a number and a unit"),
        (None, "0 6 * * *", "six fields"),
    ],
)
def test_bad_schedule_options_are_refused_naming_the_option(
    every: str | None, cron: str | None, message: str
) -> None:
    with pytest.raises(ScheduleError, match=message):
        expression(every=every, cron=cron)


def test_long_team_names_still_make_valid_unique_schedule_names() -> None:
    long_a, long_b = "a" * 64, "a" * 63 + "b"
    assert len(schedule_name(long_a)) <= 64
    assert schedule_name(long_a) != schedule_name(long_b)


def _run(event: dict[str, Any]) -> dict[str, Any]:
    store = build_token_store()
    return run_event(
        event, sync=build_sync_service(), team_exists=lambda team: bool(store.list_team(team))
    )


def test_the_runner_syncs_the_inbox_of_its_schedules_team(harness: Harness, aws: Settings) -> None:
    boto3.client("s3", region_name=aws.region).create_bucket(Bucket=aws.artifacts_bucket)
    alpha = harness.token(team="alpha")
    put = harness.call(
        alpha, "inbox_put", {"content": "# Runbook\nRotate the ledger keys monthly.", "title": "R"}
    )
    assert put["isError"] is False
    assert harness.call(alpha, "search", {"query": "ledger keys"})["results"] == []

    result = _run({"team": "alpha", "schedule": "sync-alpha"})

    assert result["skipped"] is False
    assert result["state"] == "succeeded"
    assert result["entities_seen"] == 1
    assert result["chunks_indexed"] >= 1
    found = harness.call(alpha, "search", {"query": "ledger keys"})["results"]
    assert found[0]["entity_title"] == "R"


def test_the_runner_refuses_an_event_that_is_not_its_teams_schedule(harness: Harness) -> None:
    harness.token(team="alpha")
    with pytest.raises(ScheduleError, match="may not sync team"):
        _run({"team": "alpha", "schedule": "sync-beta"})
    with pytest.raises(ScheduleError, match="no tokens"):
        _run({"team": "ghost", "schedule": "sync-ghost"})
    with pytest.raises(ValueError, match="team"):
        _run({"team": "../etc", "schedule": "sync-../etc"})


def _stack_with_outputs(region: str, calls: int) -> Any:
    """CloudFormation answering `describe_stacks` with the outputs a deployed cairn has (moto's
    CloudFormation needs API Gateway extras this suite does not install: a botocore Stubber)."""
    client = boto3.client("cloudformation", region_name=region)
    stubber = Stubber(client)
    outputs = {
        "SyncScheduleGroupName": "cairn-dev-t-sync",
        "SyncRunnerArn": RUNNER,
        "SyncSchedulerRoleArn": ROLE,
    }
    for _ in range(calls):
        stubber.add_response(
            "describe_stacks",
            {
                "Stacks": [
                    {
                        "StackName": "cairn-dev-t",
                        "CreationTime": datetime.now(tz=UTC),
                        "StackStatus": "CREATE_COMPLETE",
                        "Outputs": [{"OutputKey": k, "OutputValue": v} for k, v in outputs.items()],
                    }
                ]
            },
            {"StackName": "cairn-dev-t"},
        )
    stubber.add_client_error(
        "describe_stacks",
        service_error_code="ValidationError",
        service_message="Stack with id no-such-stack does not exist",
        expected_params={"StackName": "no-such-stack"},
    )
    stubber.activate()
    return client


def test_the_cli_manages_a_stacks_team_schedules(
    schedules: SyncSchedules,
    aws: Settings,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from shared.cli import main
    from shared.cli import schedules as schedule_cli

    client = _stack_with_outputs(aws.region, calls=6)
    monkeypatch.setattr(schedule_cli, "cloudformation", lambda: client)
    stack = ["sync", "--stack", "cairn-dev-t"]

    assert main([*stack, "schedule", "--team", "alpha", "--every", "30m"]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "team": "alpha",
        "schedule": "sync-alpha",
        "expression": "rate(30 minutes)",
    }
    assert main([*stack, "schedules"]) == 0
    (listed,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert listed["team"] == "alpha"
    assert main([*stack, "list"]) == 0  # the same as `schedules`
    assert json.loads(capsys.readouterr().out)["team"] == "alpha"
    assert main([*stack, "delete", "--team", "alpha"]) == 0  # the same as `unschedule`
    assert main([*stack, "unschedule", "--team", "alpha"]) == 2
    assert "has no sync schedule" in capsys.readouterr().err
    assert main([*stack, "schedule", "--team", "alpha", "--every", "1m"]) == 2
    assert "at least 5m" in capsys.readouterr().err
    assert main(["sync", "--stack", "no-such-stack", "schedules"]) == 2
    assert "cannot read stack" in capsys.readouterr().err
