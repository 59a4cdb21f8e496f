"""Scheduled syncs: per-team EventBridge Scheduler schedules (on moto) and the runner they start,
which syncs only the team its own schedule names."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from shared.auth.wiring import build_token_store
from shared.config.settings import Settings
from shared.search.wiring import build_search_service
from shared.sync.runner import run_scheduled_sync
from shared.sync.schedules import (
    ScheduleError,
    ScheduleTarget,
    SyncSchedules,
    expression,
    schedule_name,
)
from shared.sync.wiring import build_sync_service
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
    return run_scheduled_sync(
        event,
        sync=build_sync_service(),
        search=build_search_service(),
        team_exists=lambda team: bool(store.list_team(team)),
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
    assert result["connectors"][0]["success"] is True
    assert result["chunks_indexed"] >= 1
    found = harness.call(alpha, "search", {"query": "ledger keys"})["results"]
    assert found[0]["entity_title"] == "R"  # type: ignore[index]


def test_the_runner_refuses_an_event_that_is_not_its_teams_schedule(harness: Harness) -> None:
    harness.token(team="alpha")
    with pytest.raises(ScheduleError, match="may not sync team"):
        _run({"team": "alpha", "schedule": "sync-beta"})
    with pytest.raises(ScheduleError, match="no tokens"):
        _run({"team": "ghost", "schedule": "sync-ghost"})
    with pytest.raises(ValueError, match="team"):
        _run({"team": "../etc", "schedule": "sync-../etc"})
