"""Long runs off the tool path: on a large team sync / embeddings_build answer at once with a
queued run, the runner (a worker thread here, an asynchronous Lambda invoke in AWS) does the
work, and sync_status reports its progress; the runner re-indexes memories too."""

from __future__ import annotations

import io
import json
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.response import StreamingBody
from botocore.stub import Stubber

from shared.app.sync_service import build_sync_service
from shared.config.settings import Settings
from shared.search.wiring import build_search_service
from shared.sync.models import SyncRun
from shared.sync.runner import run_event
from shared.sync.runs import LambdaRunLauncher, ThreadRunLauncher
from shared.sync.service import SyncService
from tests.functional.conftest import Harness, no_error

RUNNER = "arn:aws:lambda:us-east-1:123456789012:function:cairn-dev-t-sync-runner"


@pytest.fixture
def large(harness: Harness, bucket: str) -> SyncService:
    """The sync service with a tiny threshold: a team of more than 2 items is large."""
    service = build_sync_service()
    service.large_team = 2
    service.run_wait_seconds = 0  # answer with the run as it stands (waiting: `waited` below)
    return service


@pytest.fixture
def waited(large: SyncService) -> SyncService:
    """The large-team service waiting for its runs, as it does by default (18 s)."""
    large.run_wait_seconds = 10
    return large


def _large_team(harness: Harness, note: str = "note {n}", **put: Any) -> str:
    """A token of team alpha, whose inbox holds 3 items (`note` numbered): a large team."""
    token = harness.token(team="alpha")
    for n in range(3):
        no_error(harness.call(token, "inbox_put", {"content": note.format(n=n), **put}))
    return token


def _drain() -> None:
    launcher = build_sync_service().launcher()
    assert isinstance(launcher, ThreadRunLauncher)
    launcher.drain()


def test_a_large_teams_sync_that_outlasts_the_wait_says_so_in_the_seeds_fields(
    harness: Harness, large: SyncService
) -> None:
    token = _large_team(harness, "harbour note {n} on tides")
    assert harness.call(token, "search", {"query": "harbour tides"})["results"] == []

    started = no_error(harness.call(token, "sync", {}))
    _drain()
    status = no_error(harness.call(token, "sync_status", {}))

    (connector,) = started["connectors"]
    assert connector["success"] is False  # not "done, nothing synced"
    assert "still running" in connector["message"]
    assert started["run"]["run_id"] in connector["message"]
    assert started["memory_pruned"] == 0
    assert started["run"]["state"] == "queued"
    assert started["run"]["kind"] == "sync"
    (run,) = status["runs"]
    assert run["run_id"] == started["run"]["run_id"]
    assert run["state"] == "succeeded"
    assert run["counts"]["entities_seen"] == 3
    assert run["started_at"] <= run["finished_at"]
    assert [c["entities"] for c in status["connectors"] if c["source"] == "inbox"] == [3]
    assert len(harness.call(token, "search", {"query": "harbour tides"})["results"]) == 3


def test_a_large_teams_sync_holds_the_lock_until_its_run_ends(
    harness: Harness, large: SyncService
) -> None:
    token = _large_team(harness)
    held: list[str] = []
    # The launcher is not started: the queued run keeps the lock, as a busy runner would.
    large.launcher = lambda: _Recorder(held)

    first = no_error(harness.call(token, "sync", {}))
    second = no_error(harness.call(token, "sync", {}))
    forced = no_error(harness.call(token, "sync_run", {}))

    assert first["run"]["state"] == "queued"
    assert second == {**second, "skipped": True, "reason": "lock"}
    assert "run" not in second
    assert forced["run"]["state"] == "queued"  # sync_run takes no lock
    assert held == [first["run"]["run_id"], forced["run"]["run_id"]]
    large.runs.execute("alpha", first["run"]["run_id"])  # the runner ends it: lock released
    assert no_error(harness.call(token, "sync", {}))["run"]["state"] == "queued"


class _Recorder:
    def __init__(self, into: list[str]) -> None:
        self._into = into

    def launch(self, team: str, run_id: str) -> None:
        self._into.append(run_id)


def test_embeddings_build_reindexes_memories_the_index_lost(harness: Harness, bucket: str) -> None:
    token = harness.token(team="alpha")
    put = no_error(
        harness.call(token, "memory_put", {"key": "kiln", "content": "the kiln fires at dawn"})
    )
    memory_id = put["memory"]["id"] if "memory" in put else put["id"]
    build_search_service().remove_memory("alpha", memory_id)  # an index loss
    assert harness.call(token, "memory_search", {"query": "kiln dawn"})["results"] == []

    built = no_error(harness.call(token, "embeddings_build", {}))

    assert built["total"] == 1
    assert "run" not in built  # a small team: done inside the call
    found = no_error(harness.call(token, "memory_search", {"query": "kiln dawn"}))["results"]
    assert [r["key"] for r in found] == ["kiln"]


def test_a_large_teams_embeddings_build_runs_in_the_background_memories_included(
    harness: Harness, large: SyncService
) -> None:
    token = harness.token(team="alpha")
    for key in ("oven", "kiln", "forge"):
        no_error(harness.call(token, "memory_put", {"key": key, "content": f"the {key} runs hot"}))
    no_error(
        harness.call(token, "memory_retract", {"id": _id(harness, token, "forge"), "reason": "x"})
    )
    search = build_search_service()
    for key in ("oven", "kiln"):
        search.remove_memory("alpha", _id(harness, token, key))

    built = no_error(harness.call(token, "embeddings_build", {}))
    _drain()
    run = no_error(harness.call(token, "sync_status", {"run_id": built["run"]["run_id"]}))["runs"][
        0
    ]

    assert built["total"] == 0
    assert built["run"]["kind"] == "embeddings_build"
    assert run["state"] == "succeeded"
    assert run["counts"]["memories_indexed"] == 2
    assert run["counts"]["memories_unindexed"] == 1
    assert "phase" not in run  # the run is over
    found = no_error(harness.call(token, "memory_search", {"query": "runs hot"}))["results"]
    keys = {r["key"] for r in found}
    assert keys == {"oven", "kiln"}


def _id(harness: Harness, token: str, key: str) -> str:
    got = no_error(harness.call(token, "memory_get", {"key": key}))
    memory = got.get("memory", got)
    return str(memory["id"])


def test_in_aws_the_run_starts_the_runner_asynchronously_and_the_runner_does_it(
    harness: Harness, large: SyncService, aws: Settings
) -> None:
    token = _large_team(harness, "quarry survey {n}", sync_immediately=True)
    client = boto3.client("lambda", region_name=aws.region)
    invoked: list[dict[str, Any]] = []
    stubber = Stubber(client)
    stubber.add_response(
        "invoke",
        {"StatusCode": 202, "Payload": StreamingBody(io.BytesIO(b""), 0)},
        {"FunctionName": RUNNER, "InvocationType": "Event", "Payload": _Capture(invoked)},
    )
    stubber.activate()
    large.launcher = lambda: LambdaRunLauncher(client, RUNNER)

    started = no_error(harness.call(token, "embeddings_build", {"source": "inbox"}))
    stubber.assert_no_pending_responses()
    (event,) = invoked
    queued = no_error(harness.call(token, "sync_status", {}))["runs"][0]
    # The runner function receives the event and checks the team exists.
    tokens = harness.tokens
    result = run_event(event, sync=large, team_exists=lambda t: bool(tokens.list_team(t)))
    done = no_error(harness.call(token, "sync_status", {}))["runs"][0]

    assert event == {"run": {"team": "alpha", "run_id": started["run"]["run_id"]}}
    assert queued["state"] == "queued"
    assert result["state"] == "succeeded"
    assert done["state"] == "succeeded"
    assert done["counts"]["chunks_indexed"] >= 3
    assert "memories_indexed" not in done["counts"]  # one source: documents only
    # A repeated delivery of the same invoke does nothing more.
    assert run_event(event, sync=large, team_exists=lambda t: True)["state"] == "succeeded"
    with pytest.raises(ValueError, match="no tokens"):
        run_event(
            {"run": {"team": "ghost", "run_id": started["run"]["run_id"]}},
            sync=large,
            team_exists=lambda t: False,
        )


class _Capture:
    """Matches any payload and keeps it decoded (Stubber compares expected params with ==)."""

    def __init__(self, into: list[dict[str, Any]]) -> None:
        self._into = into

    def __eq__(self, other: object) -> bool:
        assert isinstance(other, bytes)
        self._into.append(json.loads(other))
        return True

    __hash__ = None  # type: ignore[assignment]


def test_a_launch_that_fails_leaves_a_failed_run_and_frees_the_lock(
    harness: Harness, large: SyncService
) -> None:
    token = _large_team(harness)

    class Down:
        def launch(self, team: str, run_id: str) -> None:
            raise ConnectionError("runner unreachable")

    launcher = large.launcher
    large.launcher = Down
    failed = harness.call(token, "sync", {})
    large.launcher = launcher
    runs = no_error(harness.call(token, "sync_status", {}))["runs"]
    again = no_error(harness.call(token, "sync", {}))

    assert failed["isError"] is True
    assert runs[0]["state"] == "failed"
    assert "runner unreachable" in runs[0]["error"]
    assert again["run"]["state"] == "queued"  # the lock was released
    _drain()


def test_a_run_whose_runner_died_is_reported_failed(harness: Harness, large: SyncService) -> None:
    token = harness.token(team="alpha")
    long_ago = datetime.now(UTC) - timedelta(minutes=30)
    large.state.put_run(
        "alpha",
        SyncRun(
            run_id="run_20260101000000000000_dead",
            kind="sync",
            state="running",
            requested_by="token:x",
            created_at=long_ago,
            started_at=long_ago,
            heartbeat_at=long_ago,
        ),
    )

    (run,) = no_error(harness.call(token, "sync_status", {}))["runs"]

    assert run["state"] == "failed"
    assert "timed out or crashed" in run["error"]


def test_sync_status_of_an_unknown_or_another_teams_run_is_not_found(
    harness: Harness, large: SyncService
) -> None:
    alpha, beta = _large_team(harness), harness.token(team="beta")
    run_id = no_error(harness.call(alpha, "sync", {}))["run"]["run_id"]
    _drain()

    theirs = harness.call(beta, "sync_status", {"run_id": run_id})
    unknown = harness.call(alpha, "sync_status", {"run_id": "run_nope"})

    for result in (theirs, unknown):
        assert result["isError"] is True
        assert result["error"]["field"] == "run_id"
    assert no_error(harness.call(beta, "sync_status", {}))["runs"] == []


def test_stopping_the_local_worker_ends_the_run_in_progress_as_failed(
    harness: Harness, large: SyncService
) -> None:
    token = _large_team(harness)
    held: list[str] = []
    large.launcher = lambda: _Recorder(held)
    run_id = no_error(harness.call(token, "sync", {}))["run"]["run_id"]

    # The server is stopping: the run ends at its first progress step, and frees the lock.
    run = large.runs.execute("alpha", run_id, interrupted=lambda: True)

    assert run.state == "failed"
    assert "server stopped" in str(run.error)
    assert large.state.acquire_lock("alpha", "next", datetime.now(UTC), 60)


def test_a_run_queued_for_a_while_renews_its_lock_when_it_starts(
    harness: Harness, large: SyncService
) -> None:
    token = _large_team(harness)
    large.launcher = lambda: _Recorder([])
    queued_at = datetime.now(UTC)
    run_id = no_error(harness.call(token, "sync", {}))["run"]["run_id"]
    # The runner starts 14 minutes later, near the end of the lease taken at queue time.
    large.clock = lambda: (queued_at + timedelta(minutes=14)).timestamp()
    past_first_lease = queued_at + timedelta(minutes=16)
    taken_during_run: list[bool] = []

    def probe() -> bool:  # called at each progress step of the run
        taken_during_run.append(large.state.acquire_lock("alpha", "other", past_first_lease, 60))
        return False

    run = large.runs.execute("alpha", run_id, interrupted=probe)

    assert run.state == "succeeded"
    assert taken_during_run
    assert not any(taken_during_run)  # still the run's lock
    assert large.state.acquire_lock("alpha", "other", past_first_lease, 60)  # freed at its end


def test_a_large_teams_sync_waited_for_answers_the_seeds_result_with_the_run_alongside(
    harness: Harness, waited: SyncService
) -> None:
    token = _large_team(harness, "lighthouse log {n}")
    no_error(harness.call(token, "memory_put", {"key": "gone", "content": "x", "ttl_days": 1}))

    synced = no_error(harness.call(token, "sync", {}))

    (connector,) = synced["connectors"]
    assert connector["source"] == "inbox"
    assert connector["success"] is True
    assert connector["stats"]["entities_seen"] == 3
    assert connector["stats"]["finished_at"] is not None
    assert synced["memory_pruned"] == 0
    assert synced["run"]["state"] == "succeeded"
    assert len(harness.call(token, "search", {"query": "lighthouse log"})["results"]) == 3  # type: ignore[arg-type]


def test_a_large_teams_embeddings_build_waited_for_returns_its_real_total(
    harness: Harness, waited: SyncService
) -> None:
    token = harness.token(team="alpha")
    for key in ("oven", "kiln", "forge"):
        no_error(harness.call(token, "memory_put", {"key": key, "content": f"the {key} runs hot"}))

    built = no_error(harness.call(token, "embeddings_build", {}))

    assert built["run"]["state"] == "succeeded"
    assert built["total"] == 3  # the three memories: never 0 for "indexed nothing"
    assert built["total"] == built["run"]["counts"]["memories_indexed"]


def test_the_wait_is_bounded_when_the_runner_is_slow(harness: Harness, large: SyncService) -> None:
    token = _large_team(harness)
    large.launcher = lambda: _Recorder([])  # a runner that never gets to it
    large.run_wait_seconds = 0.5

    started = time.monotonic()
    synced = no_error(harness.call(token, "sync_run", {}))
    took = time.monotonic() - started

    assert 0.5 <= took < 5
    assert synced["run"]["state"] == "queued"
    assert synced["connectors"][0]["success"] is False
