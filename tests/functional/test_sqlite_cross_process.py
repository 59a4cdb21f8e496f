"""Two processes racing on one SQLite file through the adapters: exactly one winner each time.

This is what `cairn serve`, `cairn index` and `cairn tokens` do when they write at the same
moment. Each worker is a real process (spawned, so nothing is shared but the file).
"""

from __future__ import annotations

import multiprocessing
from datetime import UTC, datetime
from pathlib import Path

from shared.handoffs.adapters.sqlite import SqliteHandoffStore
from shared.handoffs.models import Claim, Handoff
from shared.handoffs.ports import AlreadyClaimed
from shared.storage.sqlite import Database

HANDOFFS = 60


def _claim_all(path: str, agent: str, start: multiprocessing.synchronize.Event) -> list[str]:
    store = SqliteHandoffStore(Database(Path(path)))
    start.wait()
    won = []
    for number in range(HANDOFFS):
        try:
            store.claim(
                "alpha",
                f"hof_{number}",
                Claim(agent_id=agent, claimed_at=datetime.now(UTC)),
            )
            won.append(f"hof_{number}")
        except AlreadyClaimed:
            pass
    return won


def test_two_processes_claiming_the_same_handoffs_win_each_exactly_once(tmp_path: Path) -> None:
    path = tmp_path / "cairn.db"
    store = SqliteHandoffStore(Database(path))
    for number in range(HANDOFFS):
        store.create(
            "alpha",
            Handoff(
                id=f"hof_{number}",
                title="t",
                document_md="d",
                created_by="a",
                created_at=datetime.now(UTC),
                status="open",
            ),
        )
    context = multiprocessing.get_context("spawn")
    manager = context.Manager()
    start = manager.Event()
    with context.Pool(2) as pool:
        results = [
            pool.apply_async(_claim_all, (str(path), agent, start)) for agent in ("one", "two")
        ]
        start.set()
        won_one, won_two = (r.get(timeout=120) for r in results)
    assert sorted(won_one + won_two) == sorted(f"hof_{n}" for n in range(HANDOFFS))
    assert not set(won_one) & set(won_two)
    holders = {h: store.get("alpha", h) for h in won_one}
    assert all(h is not None and h.claim and h.claim.agent_id == "one" for h in holders.values())


TASKS = 32


def _claim_tasks(path: str, agent: str, start: multiprocessing.synchronize.Event) -> list[str]:
    from datetime import timedelta

    from shared.orchestrator.tasks.adapters.sqlite import SqliteTaskStore
    from shared.orchestrator.tasks.ports import ClaimLost

    store = SqliteTaskStore(Database(Path(path)))
    start.wait()
    won = []
    for number in range(TASKS):
        now = datetime.now(UTC)
        try:
            # Fence 0: both processes read the pending task; only one write may take it.
            store.claim("alpha", f"tsk_{number}", agent, now, now + timedelta(minutes=15), 0)
            won.append(f"tsk_{number}")
        except ClaimLost:
            pass
    return won


def test_two_processes_claiming_the_same_tasks_win_each_exactly_once(tmp_path: Path) -> None:
    from shared.orchestrator.tasks.adapters.sqlite import SqliteTaskStore
    from shared.orchestrator.tasks.models import Task

    path = tmp_path / "cairn.db"
    store = SqliteTaskStore(Database(path))
    now = datetime.now(UTC)
    for number in range(TASKS):
        store.create(
            "alpha",
            Task(id=f"tsk_{number}", name="t", created_by="boss", created_at=now, updated_at=now),
        )
    context = multiprocessing.get_context("spawn")
    manager = context.Manager()
    start = manager.Event()
    with context.Pool(2) as pool:
        results = [
            pool.apply_async(_claim_tasks, (str(path), agent, start)) for agent in ("one", "two")
        ]
        start.set()
        won_one, won_two = (r.get(timeout=120) for r in results)
    assert sorted(won_one + won_two) == sorted(f"tsk_{n}" for n in range(TASKS))
    assert not set(won_one) & set(won_two)
    for task_id, agent in [*((t, "one") for t in won_one), *((t, "two") for t in won_two)]:
        stored = store.get("alpha", task_id)
        assert stored is not None
        assert (stored.claimed_by, stored.fence) == (agent, 1)


SYNC_TEAMS = 60


def _acquire_all(path: str, holder: str, start: multiprocessing.synchronize.Event) -> list[str]:
    from shared.sync.adapters.sqlite import SqliteSyncState

    state = SqliteSyncState(Database(Path(path)))
    start.wait()
    now = datetime.now(UTC)
    return [
        f"team-{number}"
        for number in range(SYNC_TEAMS)
        if state.acquire_lock(f"team-{number}", holder, now, 900)
    ]


def test_two_processes_taking_the_same_sync_locks_win_each_exactly_once(tmp_path: Path) -> None:
    from datetime import timedelta

    from shared.sync.adapters.sqlite import SqliteSyncState

    path = tmp_path / "cairn.db"
    state = SqliteSyncState(Database(path))
    # Half the teams' locks are held by a sync that crashed an hour ago: taken over, once.
    for number in range(0, SYNC_TEAMS, 2):
        assert state.acquire_lock(
            f"team-{number}", "crashed", datetime.now(UTC) - timedelta(hours=1), 900
        )
    context = multiprocessing.get_context("spawn")
    manager = context.Manager()
    start = manager.Event()
    with context.Pool(2) as pool:
        results = [
            pool.apply_async(_acquire_all, (str(path), holder, start)) for holder in ("one", "two")
        ]
        start.set()
        won_one, won_two = (r.get(timeout=120) for r in results)
    assert sorted(won_one + won_two) == sorted(f"team-{n}" for n in range(SYNC_TEAMS))
    assert not set(won_one) & set(won_two)
    now = datetime.now(UTC)
    for holder, teams in (("one", won_one), ("two", won_two)):
        for team in teams:
            assert not state.acquire_lock(team, "probe", now, 900)
            state.release_lock(team, holder)  # the winner holds it: releasing frees it
            assert state.acquire_lock(team, "probe", now, 900)
