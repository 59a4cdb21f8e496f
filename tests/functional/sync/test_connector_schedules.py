"""A schedule aimed at one connector (sync_schedule_* with `source`): beside the team-wide one on
EventBridge Scheduler (moto) and in the database, fired by the runner and by the local
scheduler for that connector alone, kept per team, and gone with its connector."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest

from shared.app.sync_service import build_sync_service
from shared.auth.wiring import build_token_store
from shared.storage.sqlite import Database
from shared.sync.adapters.sqlite import MIGRATIONS, SqliteScheduleBook
from shared.sync.local import LocalSyncScheduler
from shared.sync.runner import run_event
from shared.sync.runs import ThreadRunLauncher
from shared.sync.schedules import ScheduleError, schedule_name
from shared.sync.wiring import build_connector_store, build_local_schedules
from tests.functional.conftest import Harness, no_error
from tests.functional.sync.conftest import guide_repo, scheduled_docs
from tests.functional.test_sync_schedules import GROUP


def test_a_team_keeps_one_schedule_per_connector_beside_its_own_on_scheduler(
    in_aws: Harness, tmp_path: Path
) -> None:
    repo = guide_repo(tmp_path / "repo")
    service = build_sync_service()
    service.connector_add("alpha", name="docs", kind="git", config={"url": repo.url})
    service.connector_add("beta", name="docs", kind="git", config={"url": repo.url})
    alpha, beta = in_aws.token(team="alpha"), in_aws.token(team="beta")

    whole = no_error(in_aws.call(alpha, "sync_schedule_set", {"every": "1h"}))
    docs = no_error(in_aws.call(alpha, "sync_schedule_set", {"every": "15m", "source": "docs"}))
    theirs = no_error(in_aws.call(beta, "sync_schedule_set", {"every": "2h", "source": "docs"}))
    listed = no_error(in_aws.call(alpha, "sync_schedule_get", {}))
    one = no_error(in_aws.call(alpha, "sync_schedule_get", {"source": "docs"}))
    scheduler = boto3.client("scheduler")
    detail = scheduler.get_schedule(Name=schedule_name("alpha", "docs"), GroupName=GROUP)

    # The team-wide answer keeps its shape; the connector's carries its source.
    assert whole["schedule"] == {
        "team": "alpha",
        "schedule": "sync-alpha",
        "expression": "rate(1 hour)",
    }
    assert docs["schedule"]["source"] == "docs"
    assert docs["schedule"]["schedule"] == schedule_name("alpha", "docs")
    assert theirs["schedule"]["schedule"] != docs["schedule"]["schedule"]
    assert listed["schedule"]["expression"] == "rate(1 hour)"
    assert [(s["source"], s["expression"]) for s in listed["connectors"]] == [
        ("docs", "rate(15 minutes)")
    ]  # beta's docs schedule is not alpha's
    assert one["schedule"]["expression"] == "rate(15 minutes)"
    assert "connectors" not in one
    assert json.loads(detail["Target"]["Input"]) == {
        "team": "alpha",
        "schedule": schedule_name("alpha", "docs"),
        "source": "docs",
    }
    assert len(detail["Name"]) <= 64

    # Deleting the connector's schedule leaves the team's; removing a connector drops its own.
    deleted = no_error(in_aws.call(alpha, "sync_schedule_delete", {"source": "docs"}))
    after = no_error(in_aws.call(alpha, "sync_schedule_get", {}))
    assert deleted["deleted"] is True
    assert after["schedule"]["schedule"] == "sync-alpha"
    assert "connectors" not in after["structuredContent"]  # none left: the answer of before
    service.connector_remove("beta", "docs")
    gone = no_error(in_aws.call(beta, "sync_schedule_get", {}))
    assert gone["structuredContent"] == {"schedule": None}
    names = [s["Name"] for s in scheduler.list_schedules(GroupName=GROUP)["Schedules"]]
    assert names == ["sync-alpha"]
    repo.close()


@pytest.mark.parametrize("tool", ["sync_schedule_set", "sync_schedule_get", "sync_schedule_delete"])
def test_an_unknown_connector_is_refused_naming_source(in_aws: Harness, tool: str) -> None:
    arguments: dict[str, Any] = {"source": "nope"}
    if tool == "sync_schedule_set":
        arguments["every"] = "15m"

    result = in_aws.call(in_aws.token(team="alpha"), tool, arguments)

    assert result["isError"] is True
    assert result["error"]["field"] == "source"
    assert "cairn connectors add" in result["content"][0]["text"]
    assert boto3.client("scheduler").list_schedules(GroupName=GROUP)["Schedules"] == []


def _run(event: dict[str, Any]) -> dict[str, Any]:
    store = build_token_store()
    return run_event(
        event, sync=build_sync_service(), team_exists=lambda team: bool(store.list_team(team))
    )


def test_the_runner_syncs_only_the_connector_its_schedule_names(
    in_aws: Harness, bucket: str, tmp_path: Path
) -> None:
    repo = guide_repo(tmp_path / "repo")
    build_sync_service().connector_add("alpha", name="docs", kind="git", config={"url": repo.url})
    alpha = in_aws.token(team="alpha")
    no_error(in_aws.call(alpha, "inbox_put", {"content": "the ferry leaves at nine"}))
    no_error(in_aws.call(alpha, "sync_schedule_set", {"every": "15m", "source": "docs"}))
    detail = boto3.client("scheduler").get_schedule(
        Name=schedule_name("alpha", "docs"), GroupName=GROUP
    )

    result = _run(json.loads(detail["Target"]["Input"]))

    assert result["state"] == "succeeded"
    assert result["entities_seen"] == 1  # the guide; the inbox file waits
    docs = no_error(in_aws.call(alpha, "search", {"query": "lighthouse tides", "source": "docs"}))
    inbox = no_error(in_aws.call(alpha, "search", {"query": "ferry nine", "source": "inbox"}))
    (run,) = no_error(in_aws.call(alpha, "sync_status", {}))["runs"]
    assert docs["results"][0]["source"] == "docs"
    assert inbox["results"] == []
    assert (run["kind"], run["source"]) == ("scheduled", "docs")
    # An event whose name is not its team and source's is refused before anything runs.
    with pytest.raises(ScheduleError, match="may not sync team"):
        _run({"team": "alpha", "schedule": schedule_name("beta", "docs"), "source": "docs"})
    with pytest.raises(ScheduleError, match="may not sync team"):
        _run({"team": "alpha", "schedule": "sync-alpha", "source": "docs"})
    repo.close()


def test_the_local_scheduler_fires_a_connector_schedule_for_that_connector_alone(
    local: Harness, tmp_path: Path
) -> None:
    alpha_repo = guide_repo(tmp_path / "alpha")
    beta_repo = guide_repo(tmp_path / "beta", "The beekeeper counts the hives.")
    service = build_sync_service()
    service.connector_add("alpha", name="docs", kind="git", config={"url": alpha_repo.url})
    service.connector_add("beta", name="docs", kind="git", config={"url": beta_repo.url})
    alpha, beta = local.token(team="alpha"), local.token(team="beta")
    no_error(local.call(alpha, "inbox_put", {"content": "the ferry leaves at nine"}))
    no_error(local.call(alpha, "sync_schedule_set", {"every": "15m", "source": "docs"}))
    no_error(local.call(beta, "sync_schedule_set", {"every": "1h", "source": "docs"}))
    scheduler = LocalSyncScheduler(build_local_schedules(), service.start_scheduled)
    set_at = datetime.now(UTC)

    early = scheduler.tick(set_at + timedelta(minutes=14))
    fired = scheduler.tick(set_at + timedelta(minutes=15, seconds=5))
    launcher = service.launcher()
    assert isinstance(launcher, ThreadRunLauncher)
    launcher.drain()

    assert (early, fired) == ([], ["alpha"])  # beta's hourly one is not due
    (run,) = no_error(local.call(alpha, "sync_status", {}))["runs"]
    assert (run["kind"], run["source"], run["state"]) == ("scheduled", "docs", "succeeded")
    found = no_error(local.call(alpha, "search", {"query": "lighthouse tides", "source": "docs"}))
    assert found["results"][0]["source"] == "docs"
    assert (
        no_error(local.call(alpha, "search", {"query": "ferry", "source": "inbox"}))["results"]
        == []
    )  # the team-wide inbox was not part of it
    assert no_error(local.call(beta, "sync_status", {}))["runs"] == []
    listed = no_error(local.call(alpha, "sync_schedule_get", {}))
    assert listed["schedule"] is None
    assert listed["connectors"][0]["last_fired_at"] is not None
    # Removing the connector takes its schedule: it never fires again.
    service.connector_remove("alpha", "docs")
    assert scheduler.tick(set_at + timedelta(hours=3)) == ["beta"]
    launcher.drain()
    alpha_repo.close()
    beta_repo.close()


def test_a_database_from_before_keeps_its_team_schedules(tmp_path: Path) -> None:
    db = Database(tmp_path / "cairn.db")
    db.migrate(MIGRATIONS[:2])  # the schema before connector schedules
    with db.write() as tx:
        tx.execute(
            "INSERT INTO sync_schedules (team, expression, created_at) VALUES (?, ?, ?)",
            ("alpha", "rate(1 hour)", "2026-11-01T00:00:00+00:00"),
        )

    book = SqliteScheduleBook(db)
    book.put("alpha", "rate(15 minutes)", "docs")

    whole = book.get("alpha")
    assert whole is not None
    assert (whole.schedule, whole.expression, whole.source) == ("sync-alpha", "rate(1 hour)", None)
    assert [s.source for s in book.team_schedules("alpha")] == [None, "docs"]
    assert book.delete("alpha", "docs") is True
    assert book.get("alpha") is not None
    db.close()


def test_schedule_names_stay_within_scheduler_and_never_meet() -> None:
    names = {
        schedule_name("alpha"),
        schedule_name("alpha", "docs"),
        schedule_name("alpha.docs"),
        schedule_name("alpha", "docs2"),
        schedule_name("alpha2", "docs"),
        schedule_name("a" * 64, "b" * 40),
        schedule_name("a" * 64, "b" * 39 + "c"),
    }
    assert len(names) == 7
    assert all(
        len(n) <= 64 and n.replace("-", "").replace("_", "").replace(".", "").isalnum()
        for n in names
    )


def test_a_schedule_outliving_its_connector_can_still_be_read_and_deleted(
    in_aws: Harness, tmp_path: Path
) -> None:
    repo, alpha = scheduled_docs(in_aws, tmp_path / "repo")
    build_connector_store().remove("alpha", "docs")  # as a removal that left the schedule did

    got = no_error(in_aws.call(alpha, "sync_schedule_get", {"source": "docs"}))
    deleted = no_error(in_aws.call(alpha, "sync_schedule_delete", {"source": "docs"}))
    again = in_aws.call(alpha, "sync_schedule_delete", {"source": "docs"})

    assert got["schedule"]["source"] == "docs"
    assert deleted["deleted"] is True
    assert again["isError"] is True  # nothing left to name: the connector is unknown
    assert again["error"]["field"] == "source"
    repo.close()
