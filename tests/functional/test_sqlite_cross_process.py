"""Two processes racing on one SQLite file through the adapters: exactly one winner each time.

This is what `cairn serve`, `cairn index` and `cairn tokens` do when they write at the same
moment. Each worker is a real process (spawned, so nothing is shared but the file).
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

from shared.handoffs.adapters.sqlite import SqliteHandoffStore
from shared.handoffs.models import Claim, Handoff
from shared.handoffs.ports import AlreadyClaimed
from shared.storage.sqlite import Database

HANDOFFS = 60


T = TypeVar("T")


def _race(worker: Callable[..., list[T]], path: Path, names: tuple[str, str]) -> list[list[T]]:
    """`worker(path, name, start)` in two spawned processes (nothing shared but the file),
    released together by `start`; each one's result."""
    context = multiprocessing.get_context("spawn")
    start = context.Manager().Event()
    with context.Pool(2) as pool:
        results = [pool.apply_async(worker, (str(path), name, start)) for name in names]
        start.set()
        return [r.get(timeout=120) for r in results]


def _race_exactly_once(
    worker: Callable[..., list[str]], path: Path, names: tuple[str, str], expected: Iterable[str]
) -> tuple[list[str], list[str]]:
    """`_race` two workers for the same things: between them they won each of `expected`,
    and no thing twice. What each one won."""
    won_one, won_two = _race(worker, path, names)
    assert sorted(won_one + won_two) == sorted(expected)
    assert not set(won_one) & set(won_two)
    return won_one, won_two


def _wins(ids: Iterable[str], attempt: Callable[[str], object], lost: type[Exception]) -> list[str]:
    """Those of `ids` that `attempt` took; one it lost (raising `lost`) is left out."""
    won = []
    for id_ in ids:
        try:
            attempt(id_)
            won.append(id_)
        except lost:
            pass
    return won


def _claim_all(path: str, agent: str, start: multiprocessing.synchronize.Event) -> list[str]:
    store = SqliteHandoffStore(Database(Path(path)))
    start.wait()
    return _wins(
        (f"hof_{number}" for number in range(HANDOFFS)),
        lambda id_: store.claim("alpha", id_, Claim(agent_id=agent, claimed_at=datetime.now(UTC))),
        AlreadyClaimed,
    )


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
    won_one, _ = _race_exactly_once(
        _claim_all, path, ("one", "two"), (f"hof_{n}" for n in range(HANDOFFS))
    )
    holders = {h: store.get("alpha", h) for h in won_one}
    assert all(h is not None and h.claim and h.claim.agent_id == "one" for h in holders.values())


TASKS = 32


def _claim_tasks(path: str, agent: str, start: multiprocessing.synchronize.Event) -> list[str]:
    from datetime import timedelta

    from shared.orchestrator.tasks.adapters.sqlite import SqliteTaskStore
    from shared.orchestrator.tasks.ports import ClaimLost, TaskClaim

    store = SqliteTaskStore(Database(Path(path)))
    start.wait()

    def claim(task_id: str) -> None:
        now = datetime.now(UTC)
        # Fence 0: both processes read the pending task; only one write may take it.
        store.claim("alpha", task_id, TaskClaim(agent, now, now + timedelta(minutes=15), 0))

    return _wins((f"tsk_{number}" for number in range(TASKS)), claim, ClaimLost)


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
    won_one, won_two = _race_exactly_once(
        _claim_tasks, path, ("one", "two"), (f"tsk_{n}" for n in range(TASKS))
    )
    for task_id, agent in [*((t, "one") for t in won_one), *((t, "two") for t in won_two)]:
        stored = store.get("alpha", task_id)
        assert stored is not None
        assert (stored.claimed_by, stored.fence) == (agent, 1)


REQUESTS = 150
RATE_WINDOW = 1_800_000_000
RATE_LIMIT = 200


def _reserve_requests(path: str, _: str, start: multiprocessing.synchronize.Event) -> list[int]:
    from shared.auth.adapters.sqlite import SqliteTokenStore

    store = SqliteTokenStore(Database(Path(path)))
    start.wait()
    return [
        store.reserve_requests("tok_shared", RATE_WINDOW, RATE_WINDOW + 360, 1, RATE_LIMIT)
        for _ in range(REQUESTS)
    ]


def test_two_processes_reserving_one_rate_window_share_its_limit_exactly(tmp_path: Path) -> None:
    from shared.auth.adapters.sqlite import SqliteTokenStore

    path = tmp_path / "cairn.db"
    store = SqliteTokenStore(Database(path))
    granted_one, granted_two = _race(_reserve_requests, path, ("one", "two"))
    # 300 asked for, 200 there: together the processes got exactly the limit, none lost.
    assert sum(granted_one) + sum(granted_two) == RATE_LIMIT
    assert store.reserve_requests("tok_shared", RATE_WINDOW, RATE_WINDOW + 360, 1, RATE_LIMIT) == 0


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
    won_one, won_two = _race_exactly_once(
        _acquire_all, path, ("one", "two"), (f"team-{n}" for n in range(SYNC_TEAMS))
    )
    now = datetime.now(UTC)
    for holder, teams in (("one", won_one), ("two", won_two)):
        for team in teams:
            assert not state.acquire_lock(team, "probe", now, 900)
            state.release_lock(team, holder)  # the winner holds it: releasing frees it
            assert state.acquire_lock(team, "probe", now, 900)


MEMORY_KEYS = 40


def _create_keys(path: str, writer: str, start: multiprocessing.synchronize.Event) -> list[str]:
    from shared.memory.adapters.sqlite import SqliteMemoryStore
    from shared.memory.models import Memory
    from shared.memory.ports import KeyTaken

    store = SqliteMemoryStore(Database(Path(path)))
    start.wait()

    def create(key: str) -> None:
        now = datetime.now(UTC)
        memory = Memory(
            id=f"mem_{writer}_{key.removeprefix('key-')}",
            key=key,
            content=writer,
            created_at=now,
            updated_at=now,
            created_by=writer,
        )
        store.create("alpha", memory)

    return _wins((f"key-{number}" for number in range(MEMORY_KEYS)), create, KeyTaken)


def test_two_processes_creating_the_same_memory_keys_win_each_exactly_once(
    tmp_path: Path,
) -> None:
    from shared.memory.adapters.sqlite import SqliteMemoryStore

    path = tmp_path / "cairn.db"
    store = SqliteMemoryStore(Database(path))
    won_one, won_two = _race_exactly_once(
        _create_keys, path, ("one", "two"), (f"key-{n}" for n in range(MEMORY_KEYS))
    )
    for writer, keys in (("one", won_one), ("two", won_two)):
        for key in keys:
            assert store.id_for_key("alpha", key) == f"mem_{writer}_{key.removeprefix('key-')}"
    # The losers wrote nothing: one record per key.
    assert len(list(store.iter_team("alpha"))) == MEMORY_KEYS


AGENT_NAMES = 40


def _register_names(path: str, writer: str, start: multiprocessing.synchronize.Event) -> list[str]:
    from shared.orchestrator.agents.models import AgentRecord
    from shared.orchestrator.agents.ports import NameTaken
    from shared.orchestrator.agents.sqlite import SqliteAgentStore

    store = SqliteAgentStore(Database(Path(path)))
    start.wait()

    def register(name: str) -> None:
        number = name.removeprefix("agent-")
        agent = AgentRecord(
            agent_id=f"agt_{writer}_{number}",
            name=name,
            agent_type="codex",
            status="active",
            max_concurrent_tasks=1,
            created_at=datetime.now(UTC),
            created_by=writer,
            token_id=f"tok_{writer}_{number}",
            scopes=[],
        )
        store.create("alpha", agent)

    return _wins((f"agent-{number}" for number in range(AGENT_NAMES)), register, NameTaken)


def test_two_processes_registering_the_same_agent_names_win_each_exactly_once(
    tmp_path: Path,
) -> None:
    from shared.orchestrator.agents.sqlite import SqliteAgentStore

    path = tmp_path / "cairn.db"
    store = SqliteAgentStore(Database(path))
    won_one, won_two = _race_exactly_once(
        _register_names, path, ("one", "two"), (f"agent-{n}" for n in range(AGENT_NAMES))
    )
    for writer, names in (("one", won_one), ("two", won_two)):
        for name in names:
            holder = store.get_by_name("alpha", name)
            assert holder is not None
            assert holder.agent_id == f"agt_{writer}_{name.removeprefix('agent-')}"
    assert len(list(store.iter_team("alpha"))) == AGENT_NAMES


SESSIONS = 40


def _claim_sessions(path: str, claimer: str, start: multiprocessing.synchronize.Event) -> list[str]:
    from datetime import timedelta

    from shared.sessions.adapters.sqlite import SqliteSessionStore
    from shared.sessions.ports import CompactionLost

    store = SqliteSessionStore(Database(Path(path)))
    start.wait()
    now = datetime.now(UTC)
    return _wins(
        (f"ses_{number}" for number in range(SESSIONS)),
        lambda id_: store.claim_for_compaction(
            "alpha", id_, claimer, now, now + timedelta(minutes=5)
        ),
        CompactionLost,
    )


def test_two_processes_claiming_the_same_sessions_for_compaction_win_each_exactly_once(
    tmp_path: Path,
) -> None:
    from shared.sessions.adapters.sqlite import SqliteSessionStore
    from shared.sessions.models import Session

    path = tmp_path / "cairn.db"
    store = SqliteSessionStore(Database(path))
    now = datetime.now(UTC)
    for number in range(SESSIONS):
        store.create(
            "alpha",
            Session(
                id=f"ses_{number}",
                persona="hecate",
                wallet_address="0xa",
                created_at=now,
                updated_at=now,
                created_by="a",
            ),
            [],
        )
    won_one, won_two = _race_exactly_once(
        _claim_sessions, path, ("cln_one", "cln_two"), (f"ses_{n}" for n in range(SESSIONS))
    )
    for claimer, ids in (("cln_one", won_one), ("cln_two", won_two)):
        for session_id in ids:
            claimed = store.get("alpha", session_id)
            assert claimed is not None
            assert claimed.compacting_by == claimer
