"""The MemoryStore contract, on DynamoDB (moto) and SQLite alike."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from shared.memory.models import Memory, MemoryFlag
from shared.memory.ports import KeyTaken, MemoryGone, MemoryStore
from shared.memory.wiring import build_memory_store
from tests.unit.storage.conftest import Backend

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def memory(number: int, **fields: object) -> Memory:
    values: dict[str, object] = {
        "id": f"mem_{number:04d}",
        "content": f"memory {number}",
        "created_at": T0 + timedelta(seconds=number),
        "updated_at": T0 + timedelta(seconds=number),
        "created_by": "agent-a",
    }
    values.update(fields)
    return Memory.model_validate(values)


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
        store.replace("beta", memory(1, key="k", content="overwritten"))
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


def test_an_expired_holder_gives_up_its_key_to_a_new_memory(store: MemoryStore) -> None:
    store.create("alpha", memory(1, key="k", expires_at=past()))
    store.create("alpha", memory(2, key="k"))
    assert store.id_for_key("alpha", "k") == "mem_0002"
    assert store.get("alpha", "mem_0002") is not None


def test_replace_overwrites_and_moves_the_expiry_of_record_and_key(store: MemoryStore) -> None:
    store.create("alpha", memory(1, key="k", expires_at=future()))
    replaced = memory(1, key="k", content="new", tags=["t"], expires_at=past())
    store.replace("alpha", replaced)
    assert store.get("alpha", "mem_0001") is None
    assert store.id_for_key("alpha", "k") is None
    revived = memory(1, key="k", content="newer")
    store.replace("alpha", revived)
    assert store.get("alpha", "mem_0001") == revived
    assert store.id_for_key("alpha", "k") == "mem_0001"


def test_replacing_a_deleted_memory_says_it_is_gone(store: MemoryStore) -> None:
    created = memory(1, key="k")
    store.create("alpha", created)
    store.delete("alpha", created)
    with pytest.raises(MemoryGone):
        store.replace("alpha", memory(1, key="k", content="late"))
    assert store.get("alpha", "mem_0001") is None
    assert store.id_for_key("alpha", "k") is None


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
    barrier = threading.Barrier(8)

    def race(number: int) -> None:
        barrier.wait()
        try:
            store.create("alpha", memory(number, key="k"))
            winners.append(f"mem_{number:04d}")
        except KeyTaken:
            losers.append(f"mem_{number:04d}")

    threads = [threading.Thread(target=race, args=(n,)) for n in range(1, 9)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(winners) == 1
    assert len(losers) == 7
    assert store.id_for_key("alpha", "k") == winners[0]
    assert [m.id for m in store.iter_team("alpha")] == winners  # losers wrote nothing


def test_concurrent_flags_are_all_kept(backend: Backend, store: MemoryStore) -> None:
    if not backend.is_sqlite:
        pytest.skip("moto's updates are not atomic across threads (DynamoDB's are)")
    store.create("alpha", memory(1))
    barrier = threading.Barrier(8)

    def race(agent: str) -> None:
        barrier.wait()
        store.add_flag("alpha", "mem_0001", flag(agent))

    threads = [threading.Thread(target=race, args=(f"agent-{n}",)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
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


def test_recent_lists_newest_update_first_past_one_batch(store: MemoryStore) -> None:
    """`iter_recent` is what recall without a query reads: newest update first, lazily."""
    for number in range(1, 251):
        store.create("alpha", memory(number))
    store.create("beta", memory(999))
    rewritten = memory(5, content="edited", updated_at=T0 + timedelta(hours=1))
    store.replace("alpha", rewritten)
    ids = [m.id for m in store.iter_recent("alpha")]
    assert ids[0] == "mem_0005"
    assert ids[1:] == [f"mem_{n:04d}" for n in range(250, 0, -1) if n != 5]
    first_three = []
    for found in store.iter_recent("alpha"):
        first_three.append(found.id)
        if len(first_three) == 3:
            break
    assert first_three == ["mem_0005", "mem_0250", "mem_0249"]
