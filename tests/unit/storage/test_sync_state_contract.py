"""The SyncState contract (connector times and the team's sync lease), on DynamoDB (moto) and
SQLite alike."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from shared.sync.models import SyncRun
from shared.sync.ports import SyncState, connector_lock
from shared.sync.wiring import build_sync_state
from tests.unit.storage.conftest import Backend, at_once

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
LEASE = 900


@pytest.fixture
def state(backend: Backend) -> SyncState:
    return build_sync_state()


def test_a_free_lock_is_taken_once_until_released(state: SyncState) -> None:
    assert state.acquire_lock("alpha", "first", T0, LEASE)
    assert not state.acquire_lock("alpha", "second", T0 + timedelta(seconds=1), LEASE)
    assert not state.acquire_lock("alpha", "first", T0 + timedelta(seconds=1), LEASE)
    state.release_lock("alpha", "first")
    assert state.acquire_lock("alpha", "second", T0 + timedelta(seconds=2), LEASE)


def test_only_the_holder_releases_the_lock(state: SyncState) -> None:
    assert state.acquire_lock("alpha", "holder", T0, LEASE)
    state.release_lock("alpha", "someone-else")
    assert not state.acquire_lock("alpha", "third", T0, LEASE)


def test_an_expired_lease_is_taken_over_and_the_old_holder_cannot_release_it(
    state: SyncState,
) -> None:
    assert state.acquire_lock("alpha", "crashed", T0, LEASE)
    # Still held at the last second of the lease, free the second after.
    assert not state.acquire_lock("alpha", "second", T0 + timedelta(seconds=LEASE), LEASE)
    after = T0 + timedelta(seconds=LEASE + 1)
    assert state.acquire_lock("alpha", "second", after, LEASE)
    state.release_lock("alpha", "crashed")  # no longer the holder: no effect
    assert not state.acquire_lock("alpha", "third", after, LEASE)
    state.release_lock("alpha", "second")
    assert state.acquire_lock("alpha", "third", after, LEASE)


def test_each_team_has_its_own_lock(state: SyncState) -> None:
    assert state.acquire_lock("alpha", "a", T0, LEASE)
    assert state.acquire_lock("beta", "b", T0, LEASE)
    state.release_lock("beta", "a")  # alpha's holder names nothing in beta
    assert not state.acquire_lock("beta", "c", T0, LEASE)


def test_the_last_sync_of_each_source_replaces_the_previous(state: SyncState) -> None:
    assert state.last_syncs("alpha") == {}
    state.record_sync("alpha", "inbox", T0)
    state.record_sync("alpha", "github", T0 + timedelta(minutes=1))
    state.record_sync("alpha", "inbox", T0 + timedelta(minutes=2, microseconds=5))
    state.record_sync("beta", "inbox", T0)
    assert state.last_syncs("alpha") == {
        "inbox": T0 + timedelta(minutes=2, microseconds=5),
        "github": T0 + timedelta(minutes=1),
    }
    assert state.last_syncs("beta") == {"inbox": T0}
    assert state.last_syncs("gamma") == {}


def test_the_lock_and_the_sync_times_are_independent(state: SyncState) -> None:
    state.record_sync("alpha", "inbox", T0)
    assert state.acquire_lock("alpha", "holder", T0, LEASE)
    assert state.last_syncs("alpha") == {"inbox": T0}


@pytest.mark.parametrize("held_by_a_crashed_sync", [False, True])
def test_concurrent_acquires_have_exactly_one_winner(
    backend: Backend, state: SyncState, held_by_a_crashed_sync: bool
) -> None:
    if not backend.is_sqlite:
        pytest.skip("moto's conditional writes are not atomic across threads (DynamoDB's are)")
    if held_by_a_crashed_sync:
        assert state.acquire_lock("alpha", "crashed", T0 - timedelta(hours=1), LEASE)
    winners: list[str] = []

    def race(holder: str) -> None:
        if state.acquire_lock("alpha", holder, T0, LEASE):
            winners.append(holder)

    at_once(race, (f"sync-{n}" for n in range(8)))
    assert len(winners) == 1
    state.release_lock("alpha", winners[0])
    assert state.acquire_lock("alpha", "next", T0, LEASE)


def test_an_old_snapshot_migrates_into_sqlite(backend: Backend, tmp_path: Path) -> None:
    """Items the DynamoDB adapter wrote read back the same from SQLite after `migrate_items`."""
    if backend.is_sqlite:
        pytest.skip("the source of a migration is the DynamoDB layout")
    from shared.config import names
    from shared.storage.sqlite import Database
    from shared.sync.adapters.sqlite import SqliteSyncState

    dynamo = build_sync_state()
    dynamo.record_sync("alpha", "inbox", T0)
    dynamo.record_sync("alpha", "github", T0 + timedelta(minutes=1))
    dynamo.record_sync("beta", "inbox", T0 + timedelta(minutes=2))
    assert dynamo.acquire_lock("alpha", "running", T0, LEASE)
    items = list(backend.table(names.TABLE_SYNC).scan()["Items"])
    sqlite = SqliteSyncState(Database(tmp_path / "migrated.db"))
    assert sqlite.migrate_items([*items, {"pk": "TEAM#alpha", "sk": "OTHER#x"}]) == 4
    for team in ("alpha", "beta"):
        assert sqlite.last_syncs(team) == dynamo.last_syncs(team)
    # The lease came along: held until it expires, then taken over.
    assert not sqlite.acquire_lock("alpha", "new", T0 + timedelta(seconds=1), LEASE)
    assert sqlite.acquire_lock("alpha", "new", T0 + timedelta(seconds=LEASE + 1), LEASE)
    assert sqlite.acquire_lock("beta", "new", T0, LEASE)


def _run(run_id: str, **fields: object) -> SyncRun:
    return SyncRun.model_validate(
        {"run_id": run_id, "kind": "sync", "requested_by": "tok", "created_at": T0, **fields}
    )


def test_a_run_record_is_replaced_by_its_progress_and_read_back_by_its_team_only(
    state: SyncState,
) -> None:
    state.put_run("alpha", _run("run_20261101120000_a"))
    progressed = _run(
        "run_20261101120000_a",
        state="running",
        phase="documents",
        done=40,
        total=120,
        started_at=T0,
        heartbeat_at=T0 + timedelta(seconds=5),
        counts={"chunks_indexed": 40},
    )
    state.put_run("alpha", progressed)

    assert state.get_run("alpha", "run_20261101120000_a") == progressed
    assert state.get_run("beta", "run_20261101120000_a") is None
    assert state.get_run("alpha", "run_unknown") is None
    assert state.recent_runs("beta", 5) == []


def test_recent_runs_are_the_newest_first_and_at_most_the_limit(state: SyncState) -> None:
    for second in range(4):
        state.put_run("alpha", _run(f"run_2026110112000{second}_x"))
    state.put_run("beta", _run("run_20261101120009_x"))
    state.record_sync("alpha", "inbox", T0)  # connector rows are not runs

    recent = state.recent_runs("alpha", 3)

    assert [r.run_id for r in recent] == [
        "run_20261101120003_x",
        "run_20261101120002_x",
        "run_20261101120001_x",
    ]


def test_the_holder_renews_its_lease_and_no_one_else_does(state: SyncState) -> None:
    assert state.acquire_lock("alpha", "run:1", T0, LEASE)
    later = T0 + timedelta(seconds=LEASE - 10)

    assert state.renew_lock("alpha", "run:1", later, LEASE)
    assert not state.renew_lock("alpha", "intruder", later, LEASE)
    assert not state.renew_lock("beta", "run:1", later, LEASE)
    # Past the first lease, the renewed one still holds.
    assert not state.acquire_lock("alpha", "second", T0 + timedelta(seconds=LEASE + 1), LEASE)
    assert state.acquire_lock("alpha", "second", later + timedelta(seconds=LEASE + 1), LEASE)
    assert not state.renew_lock("alpha", "run:1", later + timedelta(seconds=LEASE + 2), LEASE)


def test_locks_of_other_names_are_independent(state: SyncState) -> None:
    docs = connector_lock("docs")
    assert state.acquire_lock("alpha", "run-1", T0, LEASE, name=docs)
    assert not state.acquire_lock("alpha", "run-2", T0, LEASE, name=docs)
    # The team's sync lock, another connector's and another team's are not that one.
    assert state.acquire_lock("alpha", "sync-1", T0, LEASE)
    assert state.acquire_lock("alpha", "run-3", T0, LEASE, name=connector_lock("notes"))
    assert state.acquire_lock("beta", "run-4", T0, LEASE, name=docs)
    state.release_lock("alpha", "run-1")  # the sync lock's release names another lock
    assert not state.acquire_lock("alpha", "run-2", T0, LEASE, name=docs)
    assert state.renew_lock("alpha", "run-1", T0, LEASE * 2, name=docs)
    state.release_lock("alpha", "run-1", name=docs)
    assert state.acquire_lock("alpha", "run-2", T0, LEASE, name=docs)
    assert not state.acquire_lock("alpha", "sync-2", T0, LEASE)  # still sync-1's
