"""The MemoryStore contract, on DynamoDB (moto) and SQLite alike."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from shared.memory.adapters import sqlite as sqlite_memory
from shared.memory.models import Finding, Memory, MemoryFlag
from shared.memory.ports import FindingStore, KeyTaken, MemoryGone, MemoryStore, StateChanged
from shared.memory.wiring import build_finding_store, build_memory_store
from shared.storage import dynamo as dynamo_toolkit
from tests.unit.storage.conftest import (
    OVERSIZED_TEXT,
    Backend,
    assert_refused_and_unstored,
    at_once,
    numbered,
)

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def memory(number: int, **fields: object) -> Memory:
    at = T0 + timedelta(seconds=number)
    return numbered(Memory, f"mem_{number:04d}", at, {"content": f"memory {number}", **fields})


def flag(agent: str) -> MemoryFlag:
    return MemoryFlag(agent_id=agent, reason="wrong", flagged_at=T0)


def past() -> datetime:
    return datetime.now(UTC) - timedelta(hours=1)


def future() -> datetime:
    return datetime.now(UTC) + timedelta(days=1)


@pytest.fixture
def store(backend: Backend) -> MemoryStore:
    return build_memory_store()


def test_a_created_memory_reads_back_whole(store: MemoryStore) -> None:
    created = memory(
        1,
        key="db",
        title="Database",
        tags=["x", "y"],
        metadata={"ratio": 0.25, "n": 3, "nested": {"ok": True}},
        applies_to=["repo"],
        status="pending",
        expires_at=future(),
    )
    store.create("alpha", created)
    assert store.get("alpha", created.id) == created
    assert store.id_for_key("alpha", "db") == created.id


def test_reads_and_writes_are_confined_to_the_team(store: MemoryStore) -> None:
    store.create("alpha", memory(1, key="k"))
    assert store.get("beta", "mem_0001") is None
    assert store.id_for_key("beta", "k") is None
    assert list(store.iter_team("beta")) == []
    assert store.add_flag("beta", "mem_0001", flag("b")) is None
    with pytest.raises(MemoryGone):
        store.set_pinned("beta", "mem_0001", True)
    store.create("beta", memory(2, key="k"))  # the same key is free in another team
    assert store.id_for_key("alpha", "k") == "mem_0001"
    stored = store.get("alpha", "mem_0001")
    assert stored is not None
    assert stored.content == "memory 1"


def test_a_taken_key_refuses_a_second_memory_and_writes_nothing(store: MemoryStore) -> None:
    store.create("alpha", memory(1, key="k"))
    with pytest.raises(KeyTaken):
        store.create("alpha", memory(2, key="k"))
    assert store.get("alpha", "mem_0002") is None
    assert store.id_for_key("alpha", "k") == "mem_0001"


def test_team_keys_and_each_wallets_engram_keys_are_separate_namespaces(
    store: MemoryStore,
) -> None:
    store.create("alpha", memory(1, key="k"))
    store.create("alpha", memory(2, key="k", wallet_address="0xA", engram_type="knowledge"))
    store.create("alpha", memory(3, key="k", wallet_address="0xB", engram_type="knowledge"))
    with pytest.raises(KeyTaken):
        store.create("alpha", memory(4, key="k", wallet_address="0xA", engram_type="persona"))
    assert store.id_for_key("alpha", "k") == "mem_0001"
    assert store.id_for_key("alpha", "k", "0xA") == "mem_0002"
    assert store.id_for_key("alpha", "k", "0xB") == "mem_0003"
    assert store.id_for_key("alpha", "k", "0xC") is None


def test_an_expired_memory_is_never_returned_by_get_or_key(store: MemoryStore) -> None:
    store.create("alpha", memory(1, key="old", expires_at=past()))
    store.create("alpha", memory(2, key="live", expires_at=future()))
    assert store.get("alpha", "mem_0001") is None
    assert store.id_for_key("alpha", "old") is None
    assert store.id_for_key("alpha", "live") == "mem_0002"
    # Still listed, so its owner can prune it (and its search entry).
    assert [m.id for m in store.iter_team("alpha")] == ["mem_0001", "mem_0002"]


def test_get_many_reads_what_get_would_return_by_id(store: MemoryStore) -> None:
    store.create("alpha", memory(1, key="k", tags=["x"]))
    store.create("alpha", memory(2, expires_at=past()))
    store.create("alpha", memory(3, status="pending"))
    store.create("beta", memory(4))

    found = store.get_many("alpha", ["mem_0003", "mem_0001", "mem_0002", "mem_0004", "mem_0009"])

    # Missing, expired and another team's ids are left out; the rest read back whole.
    assert found == {
        "mem_0001": store.get("alpha", "mem_0001"),
        "mem_0003": store.get("alpha", "mem_0003"),
    }
    assert store.get_many("alpha", []) == {}
    assert store.get_many("alpha", ["mem_0001", "mem_0001"]).keys() == {"mem_0001"}


def test_get_many_reads_past_one_batch_of_keys(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DynamoDB's BatchGetItem takes at most 100 keys a call, so `get_many` reads in batches.

    The batch is made 4 keys here, so that 10 ids need three calls without writing 130
    memories through moto (seconds); `test_dynamo_batch_get` holds the real 100-key limit.
    """
    monkeypatch.setattr(dynamo_toolkit, "BATCH_GET_KEYS", 4)
    for number in range(1, 11):
        store.create("alpha", memory(number))
    ids = [f"mem_{n:04d}" for n in range(10, 0, -1)]
    assert sorted(store.get_many("alpha", ids)) == sorted(ids)


def test_an_expired_holder_gives_up_its_key_to_a_new_memory(store: MemoryStore) -> None:
    store.create("alpha", memory(1, key="k", expires_at=past()))
    store.create("alpha", memory(2, key="k"))
    assert store.id_for_key("alpha", "k") == "mem_0002"
    assert store.get("alpha", "mem_0002") is not None


def test_delete_keeps_a_key_that_moved_on_to_another_memory(store: MemoryStore) -> None:
    first = memory(1, key="k")
    store.create("alpha", first)
    store.drop_alias("alpha", "k", None, "mem_0001")
    store.create("alpha", memory(2, key="k"))
    store.delete("alpha", first)
    assert store.get("alpha", "mem_0001") is None
    assert store.id_for_key("alpha", "k") == "mem_0002"


def test_drop_alias_only_drops_a_key_still_pointing_at_the_memory(store: MemoryStore) -> None:
    store.create("alpha", memory(1, key="k", wallet_address="0xA", engram_type="knowledge"))
    store.drop_alias("alpha", "k", "0xA", "mem_9999")
    assert store.id_for_key("alpha", "k", "0xA") == "mem_0001"
    store.drop_alias("alpha", "k", None, "mem_0001")  # the team namespace holds no such key
    assert store.id_for_key("alpha", "k", "0xA") == "mem_0001"
    store.drop_alias("alpha", "k", "0xA", "mem_0001")
    assert store.id_for_key("alpha", "k", "0xA") is None
    assert store.get("alpha", "mem_0001") is not None  # the record itself stays


def test_flags_accumulate_and_an_unknown_memory_gets_none(store: MemoryStore) -> None:
    store.create("alpha", memory(1))
    first = store.add_flag("alpha", "mem_0001", flag("a"))
    second = store.add_flag("alpha", "mem_0001", flag("b"))
    assert first is not None
    assert [f.agent_id for f in first.flags] == ["a"]
    assert second is not None
    assert [f.agent_id for f in second.flags] == ["a", "b"]
    assert store.get("alpha", "mem_0001") == second
    assert store.add_flag("alpha", "mem_nope", flag("a")) is None


def test_the_team_listing_is_in_id_order(store: MemoryStore) -> None:
    for number in (3, 1, 2):
        store.create("alpha", memory(number))
    assert [m.id for m in store.iter_team("alpha")] == ["mem_0001", "mem_0002", "mem_0003"]


def test_concurrent_creates_of_one_key_have_exactly_one_winner(
    backend: Backend, store: MemoryStore
) -> None:
    if not backend.is_sqlite:
        pytest.skip("moto's conditional writes are not atomic across threads (DynamoDB's are)")
    winners: list[str] = []
    losers: list[str] = []

    def race(number: int) -> None:
        try:
            store.create("alpha", memory(number, key="k"))
            winners.append(f"mem_{number:04d}")
        except KeyTaken:
            losers.append(f"mem_{number:04d}")

    at_once(race, range(1, 9))
    assert len(winners) == 1
    assert len(losers) == 7
    assert store.id_for_key("alpha", "k") == winners[0]
    assert [m.id for m in store.iter_team("alpha")] == winners  # losers wrote nothing


def test_concurrent_flags_are_all_kept(backend: Backend, store: MemoryStore) -> None:
    if not backend.is_sqlite:
        pytest.skip("moto's updates are not atomic across threads (DynamoDB's are)")
    store.create("alpha", memory(1))

    def flag_it(agent: str) -> None:
        store.add_flag("alpha", "mem_0001", flag(agent))

    at_once(flag_it, [f"agent-{n}" for n in range(8)])
    stored = store.get("alpha", "mem_0001")
    assert stored is not None
    assert sorted(f.agent_id for f in stored.flags) == [f"agent-{n}" for n in range(8)]


def test_an_old_snapshot_migrates_into_sqlite(backend: Backend, tmp_path: Path) -> None:
    """Items the DynamoDB adapter wrote read back the same from SQLite after `migrate_items`."""
    if backend.is_sqlite:
        pytest.skip("the source of a migration is the DynamoDB layout")
    from shared.config import names
    from shared.memory.adapters.sqlite import SqliteMemoryStore
    from shared.storage.sqlite import Database

    dynamo = build_memory_store()
    dynamo.create("alpha", memory(1, key="k", metadata={"ratio": 0.5}, expires_at=future()))
    dynamo.create(
        "alpha", memory(2, key="k#1", wallet_address="0xA", engram_type="strategy", is_public=True)
    )
    dynamo.create("alpha", memory(3, title="remembered", status="pending"))
    dynamo.add_flag("alpha", "mem_0003", flag("a"))
    dynamo.create("beta", memory(4, key="k"))
    items = list(backend.table(names.TABLE_MEMORIES).scan()["Items"])
    assert len(items) == 7  # four records, three aliases
    sqlite = SqliteMemoryStore(Database(tmp_path / "migrated.db"))
    assert sqlite.migrate_items([*items, {"pk": "TEAM#alpha", "sk": "OTHER#x"}]) == 7
    for team, number in (("alpha", 1), ("alpha", 2), ("alpha", 3), ("beta", 4)):
        migrated = sqlite.get(team, f"mem_{number:04d}")
        assert migrated is not None
        assert migrated == dynamo.get(team, f"mem_{number:04d}")
    assert sqlite.id_for_key("alpha", "k") == "mem_0001"
    assert sqlite.id_for_key("alpha", "k#1", "0xA") == "mem_0002"
    assert sqlite.id_for_key("beta", "k") == "mem_0004"
    assert list(sqlite.iter_team("alpha")) == list(dynamo.iter_team("alpha"))
    with pytest.raises(KeyTaken):
        sqlite.create("alpha", memory(5, key="k"))


def test_recent_lists_newest_update_first_past_one_batch(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`iter_recent` is what recall without a query reads: newest update first, lazily.

    SQLite reads it in batches, made 4 rows here: 10 memories cross two batch boundaries
    and end in a short batch, as 250 did with the real 100 (DynamoDB reads the whole team).
    """
    monkeypatch.setattr(sqlite_memory, "RECENT_BATCH", 4)
    for number in range(1, 11):
        store.create("alpha", memory(number))
    store.create("beta", memory(999))
    rewritten = memory(5, content="edited", updated_at=T0 + timedelta(hours=1))
    store.transition("alpha", rewritten, ACTIVE)
    ids = [m.id for m in store.iter_recent("alpha")]
    assert ids[0] == "mem_0005"
    assert ids[1:] == [f"mem_{n:04d}" for n in range(10, 0, -1) if n != 5]
    first_three = []
    for found in store.iter_recent("alpha"):
        first_three.append(found.id)
        if len(first_three) == 3:
            break
    assert first_three == ["mem_0005", "mem_0010", "mem_0009"]


# --------------------------------------------------------------- lifecycle (issue 11)

ACTIVE = frozenset({"filed", "pending"})


def test_a_transition_applies_only_from_an_expected_status(store: MemoryStore) -> None:
    proposal = memory(40, status="proposed", subject="db")
    store.create("alpha", proposal)
    approved = proposal.model_copy(update={"status": "filed"})

    store.transition("alpha", approved, frozenset({"proposed"}))

    assert store.get("alpha", proposal.id) == approved
    with pytest.raises(StateChanged) as lost:
        store.transition(
            "alpha", proposal.model_copy(update={"status": "rejected"}), frozenset({"proposed"})
        )
    assert lost.value.current == approved


def test_a_transition_of_a_missing_memory_reports_it_gone(store: MemoryStore) -> None:
    with pytest.raises(StateChanged) as lost:
        store.transition("alpha", memory(41), ACTIVE)
    assert lost.value.current is None


def test_a_retracted_keyed_memory_frees_its_key(store: MemoryStore) -> None:
    keyed = memory(42, key="db")
    store.create("alpha", keyed)

    store.transition("alpha", keyed.model_copy(update={"status": "retracted"}), ACTIVE)

    assert store.id_for_key("alpha", "db") is None
    assert store.get("alpha", keyed.id) is not None  # kept, with its history
    store.create("alpha", memory(43, key="db"))
    assert store.id_for_key("alpha", "db") == "mem_0043"


def test_racing_transitions_have_exactly_one_winner(backend: Backend) -> None:
    if not backend.is_sqlite:
        pytest.skip("moto's conditional writes are not atomic across threads (DynamoDB's are)")
    store = build_memory_store()
    proposal = memory(44, status="proposed")
    store.create("alpha", proposal)
    outcomes: list[str] = []
    start = threading.Barrier(2)

    def decide(status: str) -> None:
        own = build_memory_store()
        start.wait()
        try:
            own.transition(
                "alpha", proposal.model_copy(update={"status": status}), frozenset({"proposed"})
            )
            outcomes.append(status)
        except StateChanged:
            outcomes.append("lost")

    threads = [threading.Thread(target=decide, args=(s,)) for s in ("filed", "rejected")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(outcomes).count("lost") == 1
    winner = next(o for o in outcomes if o != "lost")
    stored = store.get("alpha", proposal.id)
    assert stored is not None
    assert stored.status == winner


def test_supersede_closes_the_old_version_and_moves_the_key(store: MemoryStore) -> None:
    old = memory(45, key="db", subject="db")
    store.create("alpha", old)
    closed = old.model_copy(update={"status": "superseded", "superseded_by": "mem_0046"})
    new = memory(46, key="db", subject="db", supersedes=old.id)

    store.supersede("alpha", closed, ACTIVE, new)

    assert store.get("alpha", old.id) == closed
    assert store.get("alpha", new.id) == new
    assert store.id_for_key("alpha", "db") == new.id


def test_supersede_of_a_version_no_longer_active_writes_nothing(store: MemoryStore) -> None:
    old = memory(47, status="retracted")
    store.create("alpha", old)
    new = memory(48, supersedes=old.id)

    with pytest.raises(StateChanged) as lost:
        store.supersede("alpha", old.model_copy(update={"status": "superseded"}), ACTIVE, new)

    assert lost.value.current == old
    assert store.get("alpha", new.id) is None


def test_structured_fields_round_trip(store: MemoryStore) -> None:
    structured = memory(
        54,
        subject="deploy window",
        kind="decision",
        sources=[{"type": "url", "ref": "https://example.com/adr/7"}],
        confidence=0.75,
        valid_from=T0,
        valid_to=T0 + timedelta(days=30),
        history=[{"at": T0, "action": "written", "by": "agent-a", "status": "filed"}],
    )
    store.create("alpha", structured)
    assert store.get("alpha", structured.id) == structured


def finding(number: int, **fields: object) -> Finding:
    values: dict[str, object] = {
        "id": f"fnd_{number:04d}",
        "kind": "conflict",
        "members": ["mem_0001", "mem_0002"],
        "detected_at": T0,
        "similarity": 0.8,
        "signals": ["negation"],
    }
    values.update(fields)
    return Finding.model_validate(values)


@pytest.fixture
def findings(backend: Backend) -> FindingStore:
    return build_finding_store()


def test_a_finding_is_added_once(findings: FindingStore) -> None:
    assert findings.add("alpha", finding(1)) is True
    assert findings.add("alpha", finding(1, signals=["other"])) is False
    assert findings.get("alpha", "fnd_0001") == finding(1)
    assert findings.get("beta", "fnd_0001") is None
    assert [f.id for f in findings.iter_team("alpha")] == ["fnd_0001"]


def test_a_finding_is_settled_once(findings: FindingStore) -> None:
    findings.add("alpha", finding(2))
    settled = finding(
        2,
        status="resolved",
        resolution={"action": "keep", "by": "agent-a", "at": T0, "result_id": "mem_0001"},
    )
    findings.settle("alpha", settled)
    assert findings.get("alpha", "fnd_0002") == settled
    with pytest.raises(StateChanged) as lost:
        findings.settle("alpha", finding(2, status="dismissed"))
    assert lost.value.current == settled


def test_a_memory_too_large_for_a_dynamodb_item_is_refused_by_both(store: MemoryStore) -> None:
    assert_refused_and_unstored(store, memory(1, content=OVERSIZED_TEXT), "content")


def test_loaded_memories_read_back_as_created_ones_do(backend: Backend) -> None:
    """The DynamoDB adapter's batch `load` (the store bench seeds its moto reference with it)
    writes what `create` writes: the record, and the key alias a lookup by key reads."""
    if backend.is_sqlite:
        # `load` is the DynamoDB adapter's own (not the port's): only there is `create` a
        # transaction, which moto makes too slow to seed a bench with.
        pytest.skip("DynamoMemoryStore.load has no SQLite counterpart")
    from shared.memory.adapters.dynamodb import DynamoMemoryStore

    store = build_memory_store()
    assert isinstance(store, DynamoMemoryStore)
    keyed, plain = memory(1, key="db", tags=["x"]), memory(2)
    store.load("alpha", [keyed, plain])
    assert store.get("alpha", keyed.id) == keyed
    assert store.get("alpha", plain.id) == plain
    assert store.get_by_key("alpha", "db") == keyed
    assert store.id_for_key("alpha", "db") == keyed.id
    assert store.get("beta", keyed.id) is None
    with pytest.raises(KeyTaken):  # the loaded alias holds its key like a created one
        store.create("alpha", memory(3, key="db"))
