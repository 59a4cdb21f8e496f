"""A team's sync schedule through the sync tools (sync_schedule_set / _get / _delete): on
EventBridge Scheduler (moto) in AWS, in the database locally, where the local scheduler fires
it on time (the clock injected: no sleeping)."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime, timedelta

import boto3
import pytest

from shared import runtime
from shared.app.groups import load_catalog, load_groups
from shared.app.sync_service import build_sync_service
from shared.auth.wiring import build_token_service
from shared.config.settings import Settings
from shared.protocol.gateway import GatewayConfig, McpGateway
from shared.sync.local import LocalSyncScheduler, due, start_local_scheduler
from shared.sync.runs import ThreadRunLauncher
from shared.sync.wiring import build_local_schedules
from shared.tools.invoker import InProcessInvoker
from tests.functional.conftest import Harness, no_error
from tests.jsonrpc import tools_call

GROUP = "cairn-dev-t-sync"
RUNNER = "arn:aws:lambda:us-east-1:123456789012:function:cairn-dev-t-sync-runner"
ROLE = "arn:aws:iam::123456789012:role/cairn-dev-t-scheduler"


def _harness(settings: Settings) -> Harness:
    runtime.configure(settings)
    invoker = InProcessInvoker(load_groups(), threading.RLock())
    tokens = build_token_service(settings)
    gateway = McpGateway(
        load_catalog(), invoker, tokens, GatewayConfig(allow_localhost_origins=True)
    )
    return Harness(gateway, tokens)


@pytest.fixture
def in_aws(aws: Settings) -> Harness:
    """The sync group as deployed: its schedules go to the stack's Scheduler group."""
    boto3.client("scheduler", region_name=aws.region).create_schedule_group(Name=GROUP)
    return _harness(
        aws.model_copy(
            update={
                "sync_schedule_group": GROUP,
                "sync_runner_arn": RUNNER,
                "sync_scheduler_role_arn": ROLE,
            }
        )
    )


@pytest.fixture
def local(aws: Settings) -> Harness:
    """The embedded stores (SQLite) with the inbox on moto's S3."""
    boto3.client("s3", region_name=aws.region).create_bucket(Bucket=aws.artifacts_bucket)
    return _harness(aws.model_copy(update={"storage": "sqlite"}))


def test_a_team_manages_its_own_schedule_on_eventbridge_scheduler(in_aws: Harness) -> None:
    alpha, beta = in_aws.token(team="alpha"), in_aws.token(team="beta")

    made = no_error(in_aws.call(alpha, "sync_schedule_set", {"every": "15m"}))
    replaced = no_error(in_aws.call(alpha, "sync_schedule_set", {"cron": "0 6 * * ? *"}))
    got = no_error(in_aws.call(alpha, "sync_schedule_get", {}))
    others = no_error(in_aws.call(beta, "sync_schedule_get", {}))
    detail = boto3.client("scheduler").get_schedule(Name="sync-alpha", GroupName=GROUP)

    assert made["schedule"] == {
        "team": "alpha",
        "schedule": "sync-alpha",
        "expression": "rate(15 minutes)",
    }
    assert replaced["schedule"]["expression"] == "cron(0 6 * * ? *)"
    assert got["schedule"]["expression"] == "cron(0 6 * * ? *)"
    assert got["schedule"]["state"] == "ENABLED"
    assert others["schedule"] is None  # beta sees only its own (none)
    assert detail["Target"]["Arn"] == RUNNER
    assert detail["Target"]["RoleArn"] == ROLE
    assert json.loads(detail["Target"]["Input"]) == {"team": "alpha", "schedule": "sync-alpha"}
    # beta deleting "its" schedule never touches alpha's.
    assert no_error(in_aws.call(beta, "sync_schedule_delete", {}))["deleted"] is False
    assert no_error(in_aws.call(alpha, "sync_schedule_delete", {}))["deleted"] is True
    assert no_error(in_aws.call(alpha, "sync_schedule_get", {}))["schedule"] is None


@pytest.mark.parametrize(
    ("arguments", "field", "words"),
    [
        ({}, "every", "exactly one"),
        ({"every": "15m", "cron": "0 6 * * ? *"}, "cron", "exactly one"),
        ({"every": "1m"}, "every", "at least 5m"),
        ({"every": "soon"}, "every", "a number and a unit"),
        ({"cron": "0 6 * * *"}, "cron", "six fields"),
        ({"cron": "0 6 * * MON *"}, "cron", "must be `?`"),
        ({"cron": "0 6 ? * * 2001"}, "cron", "never fires again"),
    ],
)
def test_a_bad_schedule_is_refused_naming_the_argument(
    in_aws: Harness, arguments: dict[str, object], field: str, words: str
) -> None:
    result = in_aws.call(in_aws.token(team="alpha"), "sync_schedule_set", arguments)

    assert result["isError"] is True
    assert result["error"]["field"] == field
    assert words in result["content"][0]["text"]
    assert boto3.client("scheduler").list_schedules(GroupName=GROUP)["Schedules"] == []


def test_the_schedule_tools_need_the_sync_scope(in_aws: Harness) -> None:
    reader = in_aws.token(team="alpha", scopes=("search", "memory"))

    reply = in_aws.post(
        tools_call("sync_schedule_set", {"every": "1h"}),
        reader,
    )

    assert reply.body is not None
    assert reply.body["error"]["code"] == -32002


def test_a_local_schedule_fires_on_time_and_runs_the_teams_sync(local: Harness) -> None:
    token = local.token(team="alpha")
    no_error(
        local.call(token, "inbox_put", {"content": "the ferry leaves at nine", "title": "Ferry"})
    )
    no_error(local.call(token, "sync_schedule_set", {"every": "15m"}))
    service = build_sync_service()
    scheduler = LocalSyncScheduler(build_local_schedules(), service.start_scheduled)
    set_at = datetime.now(UTC)

    early = scheduler.tick(set_at + timedelta(minutes=14))
    first = scheduler.tick(set_at + timedelta(minutes=15, seconds=5))
    _drain()
    again = scheduler.tick(set_at + timedelta(minutes=29))
    second = scheduler.tick(set_at + timedelta(minutes=30, seconds=10))
    _drain()
    status = no_error(local.call(token, "sync_status", {}))
    found = no_error(local.call(token, "search", {"query": "ferry nine"}))["results"]

    assert (early, first, again, second) == ([], ["alpha"], [], ["alpha"])
    assert [(r["kind"], r["state"]) for r in status["runs"]] == [("scheduled", "succeeded")] * 2
    assert status["runs"][1]["counts"]["entities_seen"] == 1
    assert status["runs"][1]["counts"]["chunks_indexed"] >= 1
    assert [r["entity_title"] for r in found] == ["Ferry"]
    fired = no_error(local.call(token, "sync_schedule_get", {}))["schedule"]["last_fired_at"]
    assert datetime.fromisoformat(fired) == set_at + timedelta(minutes=30, seconds=10)


def test_a_local_cron_schedule_fires_at_its_time_and_a_deleted_one_never(
    local: Harness,
) -> None:
    alpha, beta = local.token(team="alpha"), local.token(team="beta")
    no_error(local.call(alpha, "sync_schedule_set", {"cron": "0 6 * * ? *"}))
    no_error(local.call(beta, "sync_schedule_set", {"every": "1h"}))
    no_error(local.call(beta, "sync_schedule_delete", {}))
    fired: list[tuple[str, str]] = []
    scheduler = LocalSyncScheduler(build_local_schedules(), lambda t, n, _: fired.append((t, n)))
    now = datetime.now(UTC)
    next_six = (now + timedelta(days=1)).replace(hour=6, minute=0, second=0, microsecond=0)
    if next_six - now > timedelta(days=1):
        next_six -= timedelta(days=1)

    before = scheduler.tick(next_six - timedelta(minutes=1))
    at_six = scheduler.tick(next_six + timedelta(seconds=30))

    assert (before, at_six) == ([], ["alpha"])
    assert fired == [("alpha", "sync-alpha")]


def test_a_schedule_firing_while_a_sync_holds_the_lock_is_skipped(local: Harness) -> None:
    token = local.token(team="alpha")
    no_error(local.call(token, "sync_schedule_set", {"every": "5m"}))
    service = build_sync_service()
    assert service.state.acquire_lock("alpha", "someone", datetime.now(UTC), 900)
    scheduler = LocalSyncScheduler(build_local_schedules(), service.start_scheduled)

    fired = scheduler.tick(datetime.now(UTC) + timedelta(minutes=6))

    assert fired == ["alpha"]
    (run,) = no_error(local.call(token, "sync_status", {}))["runs"]
    assert (run["kind"], run["state"]) == ("scheduled", "skipped")
    assert "lock" in run["error"]


def test_rate_and_cron_due_times() -> None:
    since = datetime(2026, 11, 23, 10, 0, tzinfo=UTC)
    assert not due("rate(2 hours)", since, since + timedelta(minutes=119))
    assert due("rate(2 hours)", since, since + timedelta(hours=2))
    assert not due("cron(30 10 * * ? *)", since, since + timedelta(minutes=29))
    assert due("cron(30 10 * * ? *)", since, since + timedelta(minutes=30))


def test_the_servers_scheduler_stops_before_the_database_closes(local: Harness) -> None:
    scheduler = start_local_scheduler(build_sync_service)
    thread = scheduler._thread
    assert thread is not None
    assert thread.is_alive()

    runtime.configure(Settings())  # what the local server's stop does

    assert not thread.is_alive()


def _drain() -> None:
    launcher = build_sync_service().launcher()
    assert isinstance(launcher, ThreadRunLauncher)
    launcher.drain()
