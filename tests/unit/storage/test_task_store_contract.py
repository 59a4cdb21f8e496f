"""The TaskStore contract, on DynamoDB (moto) and SQLite alike."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from shared.orchestrator.tasks.adapters import sqlite as sqlite_tasks
from shared.orchestrator.tasks.models import Task
from shared.orchestrator.tasks.ports import (
    AlreadyClosed,
    ClaimLost,
    ClaimNotHeld,
    TaskClaim,
    TaskFilter,
    TaskFinish,
    TaskStore,
)
from shared.orchestrator.tasks.wiring import build_task_store
from shared.storage.values import UnstorableValue
from tests.unit.storage.conftest import (
    Backend,
    assert_cursors_stay_in_their_listing,
    assert_second_page_is_last,
    at_once,
    ids_of_every_page,
)

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
LEASE = timedelta(minutes=15)
ANY = TaskFilter()


def task(number: int, **fields: object) -> Task:
    created = T0 + timedelta(seconds=number)
    values: dict[str, object] = {
        "id": f"tsk_{number:04d}",
        "name": f"task {number}",
        "created_by": "boss",
        "created_at": created,
        "updated_at": created,
    }
    values.update(fields)
    return Task.model_validate(values)


@pytest.fixture
def store(backend: Backend) -> TaskStore:
    return build_task_store()


def claim(store: TaskStore, holder: str, at: datetime = T0, number: int = 1) -> Task:
    """Claim `tsk_<number>` at `at`, expecting the fence the store holds now."""
    current = store.get("alpha", f"tsk_{number:04d}")
    assert current is not None
    return store.claim("alpha", current.id, TaskClaim(holder, at, at + LEASE, current.fence))


def test_a_created_task_reads_back_whole(store: TaskStore) -> None:
    created = task(
        1,
        description="d",
        requires_capability="python",
        priority=7,
        input_data={"n": 3, "ratio": 0.5, "nested": {"list": [1, "two"]}},
        input_artifact_ids=["art_1"],
        workflow_id="wf_1",
        workflow_step_id="step",
        depends_on=[{"task_id": "tsk_0000"}],
        parent_task_id="tsk_0009",
    )
    store.create("alpha", created)
    assert store.get("alpha", created.id) == created


def test_reads_and_transitions_are_confined_to_the_team(store: TaskStore) -> None:
    store.create("alpha", task(1))
    assert store.get("beta", "tsk_0001") is None
    assert list(store.list_open("beta")) == []
    assert store.list_team("beta", ANY, limit=10).items == []
    with pytest.raises(ClaimLost) as lost:
        store.claim("beta", "tsk_0001", TaskClaim("outsider", T0, T0 + LEASE, 0))
    assert lost.value.current is None
    with pytest.raises(AlreadyClosed) as closed:
        store.cancel("beta", "tsk_0001", None, T0)
    assert closed.value.current is None
    stored = store.get("alpha", "tsk_0001")
    assert stored is not None
    assert stored.status == "pending"


def test_a_claim_is_won_once_and_the_loser_learns_the_holder(store: TaskStore) -> None:
    store.create("alpha", task(1))
    won = store.claim("alpha", "tsk_0001", TaskClaim("first", T0, T0 + LEASE, 0))
    assert (won.status, won.claimed_by, won.fence) == ("claimed", "first", 1)
    assert won.claimed_at == T0
    assert won.lease_expires_at == T0 + LEASE
    with pytest.raises(ClaimLost) as lost:
        store.claim("alpha", "tsk_0001", TaskClaim("second", T0, T0 + LEASE, 0))
    assert lost.value.current is not None
    assert lost.value.current.claimed_by == "first"
    assert lost.value.current.lease_expires_at == T0 + LEASE
    assert store.get("alpha", "tsk_0001") == won


def test_a_claim_with_the_current_fence_still_loses_to_a_live_lease(store: TaskStore) -> None:
    store.create("alpha", task(1))
    claim(store, "first")
    with pytest.raises(ClaimLost) as lost:
        claim(store, "second", at=T0 + LEASE - timedelta(seconds=1))
    assert lost.value.current is not None
    assert lost.value.current.claimed_by == "first"


def test_claiming_an_unknown_task_reports_none(store: TaskStore) -> None:
    with pytest.raises(ClaimLost) as lost:
        store.claim("alpha", "tsk_nope", TaskClaim("a", T0, T0 + LEASE, 0))
    assert lost.value.current is None


def test_an_expired_lease_is_claimable_and_the_fence_moves_on(store: TaskStore) -> None:
    store.create("alpha", task(1))
    claim(store, "slow")
    later = T0 + LEASE
    taken = claim(store, "fast", at=later)
    assert (taken.claimed_by, taken.fence, taken.status) == ("fast", 2, "claimed")
    assert taken.lease_expires_at == later + LEASE


def test_a_running_task_whose_lease_expired_is_claimable(store: TaskStore) -> None:
    store.create("alpha", task(1))
    claim(store, "slow")
    store.start("alpha", "tsk_0001", "slow", T0, T0 + LEASE)
    assert claim(store, "fast", at=T0 + LEASE).claimed_by == "fast"


def test_a_claim_with_a_stale_fence_loses(store: TaskStore) -> None:
    store.create("alpha", task(1))
    claim(store, "first")
    # Read at fence 0, but the lease was taken (fence 1) before this claim's write.
    with pytest.raises(ClaimLost) as lost:
        store.claim("alpha", "tsk_0001", TaskClaim("late", T0 + LEASE, T0 + 2 * LEASE, 0))
    assert lost.value.current is not None
    assert lost.value.current.fence == 1


def test_start_needs_the_holders_live_claim_and_renews_the_lease(store: TaskStore) -> None:
    store.create("alpha", task(1))
    with pytest.raises(ClaimNotHeld):
        store.start("alpha", "tsk_0001", "a", T0, T0 + LEASE)
    claim(store, "a")
    with pytest.raises(ClaimNotHeld) as other:
        store.start("alpha", "tsk_0001", "b", T0, T0 + LEASE)
    assert other.value.current is not None
    assert other.value.current.claimed_by == "a"
    at = T0 + timedelta(minutes=5)
    running = store.start("alpha", "tsk_0001", "a", at, at + LEASE)
    assert (running.status, running.started_at, running.lease_expires_at) == (
        "running",
        at,
        at + LEASE,
    )
    # Renewed: the original lease's end no longer frees it.
    with pytest.raises(ClaimLost):
        claim(store, "b", at=T0 + LEASE)
    with pytest.raises(ClaimNotHeld):  # started already
        store.start("alpha", "tsk_0001", "a", at, at + LEASE)


def test_start_after_the_lease_ran_out_is_refused(store: TaskStore) -> None:
    store.create("alpha", task(1))
    claim(store, "a")
    with pytest.raises(ClaimNotHeld) as lost:
        store.start("alpha", "tsk_0001", "a", T0 + LEASE, T0 + 2 * LEASE)
    assert lost.value.current is not None
    assert lost.value.current.claimed_by == "a"


def test_a_completion_with_a_stale_fence_is_refused(store: TaskStore) -> None:
    store.create("alpha", task(1))
    claim(store, "worker")
    taken = claim(store, "worker", at=T0 + LEASE)  # same identity, new claim: fence 2
    with pytest.raises(ClaimNotHeld) as stale:
        store.finish("alpha", "tsk_0001", TaskFinish("worker", 1, "completed", {}, T0 + LEASE))
    assert stale.value.current is not None
    assert stale.value.current.fence == 2
    done = store.finish(
        "alpha",
        "tsk_0001",
        TaskFinish(
            "worker",
            taken.fence,
            "completed",
            {
                "output_summary": "ok",
                "estimated_cost_usd": 0.42,
                "tokens_input": 12,
                "model_used": None,
            },
            T0 + LEASE,
        ),
    )
    assert (done.status, done.output_summary, done.estimated_cost_usd) == ("completed", "ok", 0.42)
    assert done.tokens_input == 12
    assert done.finished_at == T0 + LEASE
    assert store.get("alpha", "tsk_0001") == done


def test_only_the_holder_finishes_and_a_closed_task_stays_closed(store: TaskStore) -> None:
    store.create("alpha", task(1))
    held = claim(store, "a")
    with pytest.raises(ClaimNotHeld) as other:
        store.finish("alpha", "tsk_0001", TaskFinish("b", held.fence, "failed", {}, T0))
    assert other.value.current is not None
    assert other.value.current.claimed_by == "a"
    failed = store.finish(
        "alpha", "tsk_0001", TaskFinish("a", held.fence, "failed", {"error_message": "x"}, T0)
    )
    assert (failed.status, failed.error_message) == ("failed", "x")
    with pytest.raises(ClaimNotHeld):
        store.finish("alpha", "tsk_0001", TaskFinish("a", held.fence, "completed", {}, T0))
    with pytest.raises(ClaimLost) as lost:
        claim(store, "b", at=T0 + 2 * LEASE)
    assert lost.value.current is not None
    assert lost.value.current.status == "failed"


def test_cancel_closes_an_open_task_once(store: TaskStore) -> None:
    store.create("alpha", task(1))
    store.create("alpha", task(2))
    claim(store, "a", number=2)
    cancelled = store.cancel("alpha", "tsk_0001", "not needed", T0)
    assert (cancelled.status, cancelled.cancel_reason) == ("cancelled", "not needed")
    assert store.cancel("alpha", "tsk_0002", None, T0).cancel_reason is None
    with pytest.raises(AlreadyClosed) as closed:
        store.cancel("alpha", "tsk_0001", None, T0)
    assert closed.value.current is not None
    assert closed.value.current.status == "cancelled"
    assert list(store.list_open("alpha")) == []


def test_open_tasks_list_by_priority_then_age_and_drop_closed_ones(store: TaskStore) -> None:
    store.create("alpha", task(1, priority=-5))
    store.create("alpha", task(2))
    store.create("alpha", task(3))
    store.create("alpha", task(4, priority=10))
    store.create("alpha", task(5))
    store.create("alpha", task(6, priority=1000))
    claim(store, "a", number=3)
    store.cancel("alpha", "tsk_0005", None, T0)
    held = claim(store, "a", number=6)
    store.finish("alpha", "tsk_0006", TaskFinish("a", held.fence, "completed", {}, T0))
    assert [t.id for t in store.list_open("alpha")] == [
        "tsk_0004",
        "tsk_0002",
        "tsk_0003",
        "tsk_0001",
    ]


def test_open_tasks_read_past_one_batch(store: TaskStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """SQLite reads the open queue in keyset batches, made 4 rows here: 14 tasks of three
    priorities make batches that continue within a priority and across one, and a short last
    batch, as 250 did with the real 100 (without 250 writes through moto)."""
    monkeypatch.setattr(sqlite_tasks, "_QUEUE_BATCH", 4)
    for number in range(1, 15):
        store.create("alpha", task(number, priority=number % 3))
    listed = [t.id for t in store.list_open("alpha")]
    expected = sorted(
        (task(n, priority=n % 3) for n in range(1, 15)), key=lambda t: (-t.priority, t.created_at)
    )
    assert listed == [t.id for t in expected]


def _two_claims_of_a_one_of_b(store: TaskStore) -> None:
    """Four tasks; "a" claims tsk_0002 at T0 and tsk_0001 ten minutes later, "b" tsk_0003."""
    for number in range(1, 5):
        store.create("alpha", task(number))
    claim(store, "a", number=2)
    claim(store, "a", at=T0 + timedelta(minutes=10), number=1)
    claim(store, "b", number=3)


def test_claims_held_are_the_live_claims_of_the_holder(store: TaskStore) -> None:
    _two_claims_of_a_one_of_b(store)
    assert [t.id for t in store.claims_held("alpha", "a", T0)] == ["tsk_0001", "tsk_0002"]
    # tsk_0002's lease ends at T0 + 15 min, tsk_0001's at T0 + 25 min.
    assert [t.id for t in store.claims_held("alpha", "a", T0 + LEASE)] == ["tsk_0001"]
    assert store.claims_held("beta", "a", T0) == []


def test_counting_claims_held_agrees_with_listing_them(store: TaskStore) -> None:
    _two_claims_of_a_one_of_b(store)
    for now in (T0, T0 + LEASE, T0 + LEASE + timedelta(minutes=10)):
        for holder in ("a", "b", "c"):
            held = store.claims_held("alpha", holder, now)
            assert store.count_claims_held("alpha", holder, now) == len(held)
    assert store.count_claims_held("alpha", "a", T0) == 2
    assert store.count_claims_held("beta", "a", T0) == 0


def test_the_team_list_is_newest_first_and_filters_exactly(store: TaskStore) -> None:
    store.create("alpha", task(1, workflow_id="wf_1"))
    store.create("alpha", task(2, workflow_id="wf_2"))
    store.create("alpha", task(3, workflow_id="wf_1"))
    claim(store, "a", number=2)
    claim(store, "b", number=3)

    def ids(wanted: TaskFilter) -> list[str]:
        return [t.id for t in store.list_team("alpha", wanted, limit=10).items]

    assert ids(ANY) == ["tsk_0003", "tsk_0002", "tsk_0001"]
    assert ids(TaskFilter(status="pending")) == ["tsk_0001"]
    assert ids(TaskFilter(workflow_id="wf_1")) == ["tsk_0003", "tsk_0001"]
    assert ids(TaskFilter(claimed_by="a")) == ["tsk_0002"]
    assert ids(TaskFilter(status="claimed", workflow_id="wf_1")) == ["tsk_0003"]


def test_pages_chain_without_gaps_or_repeats(store: TaskStore) -> None:
    for number in range(1, 12):
        store.create("alpha", task(number, workflow_id="wf_1" if number % 2 else "wf_2"))
    # Two tasks created in the same instant: the id breaks the tie on both adapters.
    store.create("alpha", task(12, id="tsk_0012a", created_at=T0 + timedelta(seconds=11)))
    seen = ids_of_every_page(
        lambda cursor: store.list_team(
            "alpha", TaskFilter(workflow_id="wf_1"), limit=2, cursor=cursor
        )
    )
    assert seen == [f"tsk_{n:04d}" for n in (11, 9, 7, 5, 3, 1)]
    everything = ids_of_every_page(
        lambda cursor: store.list_team("alpha", ANY, limit=5, cursor=cursor)
    )
    assert everything[:2] == ["tsk_0012a", "tsk_0011"]
    assert len(everything) == len(set(everything)) == 12


def test_the_last_page_has_no_cursor(store: TaskStore) -> None:
    for number in range(1, 5):
        store.create("alpha", task(number))
    assert_second_page_is_last(
        lambda cursor: store.list_team("alpha", ANY, limit=2, cursor=cursor),
        ["tsk_0002", "tsk_0001"],
    )


def test_a_cursor_of_another_team_or_listing_is_refused(store: TaskStore) -> None:
    for number in range(1, 4):
        store.create("alpha", task(number))
    assert_cursors_stay_in_their_listing(
        lambda team, cursor: store.list_team(team, ANY, limit=1, cursor=cursor)
    )


def test_concurrent_claims_have_exactly_one_winner(backend: Backend, store: TaskStore) -> None:
    if not backend.is_sqlite:
        pytest.skip("moto's conditional writes are not atomic across threads (DynamoDB's are)")
    store.create("alpha", task(1))
    winners: list[str] = []
    holders: set[str | None] = set()

    def race(agent: str) -> None:
        try:
            store.claim("alpha", "tsk_0001", TaskClaim(agent, T0, T0 + LEASE, 0))
            winners.append(agent)
        except ClaimLost as lost:
            holders.add(lost.current.claimed_by if lost.current else None)

    at_once(race, (f"agent-{n}" for n in range(8)))
    assert len(winners) == 1
    assert holders == set(winners)


def test_an_old_snapshot_migrates_into_sqlite(backend: Backend, tmp_path: Path) -> None:
    """Items the DynamoDB adapter wrote read back the same from SQLite after `migrate_items`."""
    if backend.is_sqlite:
        pytest.skip("the source of a migration is the DynamoDB layout")
    from shared.config import names
    from shared.orchestrator.tasks.adapters.sqlite import SqliteTaskStore
    from shared.storage.sqlite import Database

    dynamo = build_task_store()
    for number in range(1, 6):
        dynamo.create("alpha", task(number, priority=number % 2, input_data={"ratio": 0.5}))
    dynamo.create("beta", task(9))
    held = dynamo.claim("alpha", "tsk_0002", TaskClaim("a", T0, T0 + LEASE, 0))
    dynamo.start("alpha", "tsk_0002", "a", T0, T0 + LEASE)
    done = dynamo.claim("alpha", "tsk_0003", TaskClaim("b", T0, T0 + LEASE, 0))
    dynamo.finish(
        "alpha", "tsk_0003", TaskFinish("b", done.fence, "completed", {"output_summary": "ok"}, T0)
    )
    dynamo.cancel("alpha", "tsk_0004", "no", T0)
    items = list(backend.table(names.TABLE_COORDINATION).scan()["Items"])
    sqlite = SqliteTaskStore(Database(tmp_path / "migrated.db"))
    other = {"pk": "TEAM#alpha", "sk": "AGENT#x", "team": "alpha"}
    assert sqlite.migrate_items([*items, other]) == 6
    for team, number in [*(("alpha", n) for n in range(1, 6)), ("beta", 9)]:
        assert sqlite.get(team, f"tsk_{number:04d}") == dynamo.get(team, f"tsk_{number:04d}")
    assert [t.id for t in sqlite.list_open("alpha")] == [t.id for t in dynamo.list_open("alpha")]
    assert (
        sqlite.list_team("alpha", ANY, limit=10).items
        == dynamo.list_team("alpha", ANY, limit=10).items
    )
    # The migrated lease still decides: live until its end, claimable after.
    with pytest.raises(ClaimLost):
        sqlite.claim("alpha", "tsk_0002", TaskClaim("c", T0, T0 + LEASE, held.fence))
    assert (
        sqlite.claim(
            "alpha", "tsk_0002", TaskClaim("c", T0 + LEASE, T0 + 2 * LEASE, held.fence)
        ).fence
        == 2
    )


def test_a_task_too_large_for_a_dynamodb_item_is_refused_by_both(store: TaskStore) -> None:
    # 100k four-byte characters: within the model's length limit, over DynamoDB's 400 KB.
    oversized = task(1, input_data={"text": "\U0001f600" * 100_000})
    with pytest.raises(UnstorableValue) as refused:
        store.create("alpha", oversized)
    assert refused.value.field == "input_data"
    assert store.get("alpha", oversized.id) is None
