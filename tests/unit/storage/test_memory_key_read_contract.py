"""`MemoryStore.get_by_key`: a memory by its key in one read, on DynamoDB (moto) and SQLite.

Every write of a keyed memory keeps what the key reads in step with the record; data written
before the key carried its record (a DynamoDB alias with only `memory_id`, SQLite's old
`memory_aliases` table) still reads.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from shared import runtime
from shared.config import names
from shared.memory.models import ACTIVE_STATUSES, Memory, MemoryFlag
from shared.memory.ports import KeyTaken, MemoryStore
from shared.memory.wiring import build_memory_store
from shared.storage.sqlite import Database, to_json
from shared.storage.times import sortable
from tests.unit.storage.conftest import Backend
from tests.unit.storage.test_memory_store_contract import T0, memory

ACTIVE = frozenset(ACTIVE_STATUSES)


@pytest.fixture
def store(backend: Backend) -> MemoryStore:
    return build_memory_store()


def test_the_key_reads_the_record_through_every_write(store: MemoryStore) -> None:
    # Created: the key reads it whole.
    created = memory(1, key="db", tags=["a"], metadata={"n": 1})
    store.create("alpha", created)
    assert store.get_by_key("alpha", "db") == created

    # Pinned, transitioned (memory_put's update): the key reads the new record.
    pinned = store.set_pinned("alpha", created.id, True)
    assert pinned == created.model_copy(update={"pinned": True})
    assert store.get_by_key("alpha", "db") == pinned
    updated = pinned.model_copy(update={"content": "changed", "updated_at": T0 + timedelta(1)})
    store.transition("alpha", updated, ACTIVE)
    assert store.get_by_key("alpha", "db") == updated

    # Flagged: the key reads the flag too.
    flagged = store.add_flag(
        "alpha", created.id, MemoryFlag(agent_id="b", reason="wrong", flagged_at=T0)
    )
    assert flagged is not None
    assert [f.agent_id for f in flagged.flags] == ["b"]
    assert store.get_by_key("alpha", "db") == flagged == store.get("alpha", created.id)

    # Superseded: the key reads the new version.
    closed = flagged.model_copy(update={"status": "superseded", "superseded_by": "mem_0002"})
    new = memory(2, key="db", content="second", supersedes=created.id)
    store.supersede("alpha", closed, ACTIVE, new)
    assert store.get_by_key("alpha", "db") == new

    # Retracted: the key is free, the record kept.
    store.transition("alpha", new.model_copy(update={"status": "retracted"}), ACTIVE)
    assert store.get_by_key("alpha", "db") is None
    assert store.get("alpha", new.id) is not None

    # Deleted: gone by key as by id.
    third = memory(3, key="db")
    store.create("alpha", third)
    assert store.get_by_key("alpha", "db") == third
    store.delete("alpha", third)
    assert store.get_by_key("alpha", "db") is None


def test_an_engram_key_and_another_team_read_apart(store: MemoryStore) -> None:
    team_key = memory(1, key="k")
    engram = memory(2, key="k", wallet_address="0xA", engram_type="knowledge")
    store.create("alpha", team_key)
    store.create("alpha", engram)
    assert store.get_by_key("alpha", "k") == team_key
    assert store.get_by_key("alpha", "k", "0xA") == engram
    assert store.get_by_key("alpha", "k", "0xB") is None
    assert store.get_by_key("beta", "k") is None


def test_an_expired_memory_is_not_read_by_key(store: MemoryStore) -> None:
    store.create("alpha", memory(1, key="old", expires_at=datetime.now(UTC) - timedelta(hours=1)))
    assert store.get_by_key("alpha", "old") is None


def test_writes_of_a_memory_whose_key_moved_on_leave_the_new_holder_alone(
    store: MemoryStore,
) -> None:
    # Given a key that moved from memory 1 to memory 2
    first = memory(1, key="k")
    store.create("alpha", first)
    store.drop_alias("alpha", "k", None, first.id)
    second = memory(2, key="k", content="the holder")
    store.create("alpha", second)

    # When memory 1 is updated, flagged, superseded-free retracted
    store.transition("alpha", first.model_copy(update={"content": "stale"}), ACTIVE)
    assert (
        store.add_flag("alpha", first.id, MemoryFlag(agent_id="b", reason="x", flagged_at=T0))
        is not None
    )
    store.transition("alpha", first.model_copy(update={"status": "retracted"}), ACTIVE)

    # Then the key still reads memory 2 as it was, and memory 1 took every write
    assert store.get_by_key("alpha", "k") == second
    stored = store.get("alpha", first.id)
    assert stored is not None
    assert stored.status == "retracted"


def test_a_get_by_key_is_one_read(backend: Backend, store: MemoryStore) -> None:
    store.create("alpha", memory(1, key="db"))
    if not backend.is_sqlite:
        calls: Counter[str] = Counter()

        def count(model: Any, **_: Any) -> None:
            calls[model.name] += 1

        events = runtime.table(names.TABLE_MEMORIES).meta.client.meta.events
        events.register("before-call.dynamodb", count)
        try:
            assert store.get_by_key("alpha", "db") is not None
        finally:
            events.unregister("before-call.dynamodb", count)
        assert calls == Counter({"GetItem": 1})
        return
    connection = runtime.database().connection()
    statements: list[str] = []
    connection.set_trace_callback(statements.append)
    try:
        assert store.get_by_key("alpha", "db") is not None
    finally:
        connection.set_trace_callback(None)
    assert len(statements) == 1
    plan = " ".join(
        str(row[-1]) for row in connection.execute("EXPLAIN QUERY PLAN " + statements[0])
    )
    assert "USING INDEX memories_by_key" in plan


def test_a_dynamodb_alias_without_the_record_still_reads(backend: Backend) -> None:
    """Aliases written before they carried the record: read by id, upgraded by the next write."""
    if backend.is_sqlite:
        pytest.skip("the DynamoDB item layout")
    store = build_memory_store()
    table = runtime.table(names.TABLE_MEMORIES)
    kept = memory(1, key="kept")
    store.create("alpha", kept)
    table.put_item(Item={"pk": "TEAM#alpha", "sk": "KEY#kept", "memory_id": kept.id})
    table.put_item(Item={"pk": "TEAM#alpha", "sk": "KEY#dangling", "memory_id": "mem_gone"})

    assert store.get_by_key("alpha", "kept") == kept
    assert store.get_by_key("alpha", "dangling") is None
    assert "Item" not in table.get_item(Key={"pk": "TEAM#alpha", "sk": "KEY#dangling"})

    updated = kept.model_copy(update={"content": "rewritten"})
    store.transition("alpha", updated, ACTIVE)
    alias = table.get_item(Key={"pk": "TEAM#alpha", "sk": "KEY#kept"})["Item"]
    assert alias["content"] == "rewritten"
    assert store.get_by_key("alpha", "kept") == updated


def test_sqlite_keys_of_the_old_alias_table_move_onto_their_rows(tmp_path: Path) -> None:
    from shared.memory.adapters.sqlite import MIGRATIONS, SqliteMemoryStore

    # Given a database of the schema before migration 3, with two aliases and a dangling one
    db = Database(tmp_path / "cairn.db")
    db.migrate(MIGRATIONS[:2])
    put = memory(1, key="k")
    engram = memory(2, key="k", wallet_address="0xA", engram_type="persona")
    with db.write() as tx:
        for row in (put, engram):
            _old_row(tx, row)
        aliases = (("KEY", "k", put.id), ("ENGRAM#0xA", "k", engram.id), ("KEY", "x", "mem_gone"))
        tx.executemany(
            "INSERT INTO memory_aliases (team, namespace, key, memory_id, expires_at)"
            " VALUES ('alpha', ?, ?, ?, NULL)",
            aliases,
        )
    db.close()

    # When the store opens it
    store = SqliteMemoryStore(Database(tmp_path / "cairn.db"))

    # Then every key reads its memory, is still taken, and the dangling one is free
    assert store.get_by_key("alpha", "k") == put
    assert store.get_by_key("alpha", "k", "0xA") == engram
    with pytest.raises(KeyTaken):
        store.create("alpha", memory(3, key="k"))
    store.create("alpha", memory(4, key="x"))
    assert store.id_for_key("alpha", "x") == "mem_0004"


def _old_row(tx: sqlite3.Connection, row: Memory) -> None:
    tx.execute(
        "INSERT INTO memories (team, id, expires_at, updated_at, status, record)"
        " VALUES ('alpha', ?, NULL, ?, 'filed', ?)",
        (row.id, sortable(row.updated_at), to_json(row.model_dump(mode="json", exclude_none=True))),
    )


def test_a_delete_that_conflicts_leaves_record_and_key_together(backend: Backend) -> None:
    """DynamoDB: a transaction cancelled for a reason other than the alias having moved on (a
    conflicting write) deletes nothing rather than the record alone, which would leave the
    alias answering with the deleted record's copy."""
    if backend.is_sqlite:
        pytest.skip("one SQLite transaction deletes the row with its key")
    from botocore.awsrequest import AWSResponse
    from botocore.exceptions import ClientError

    store = build_memory_store()
    kept = memory(1, key="k")
    store.create("alpha", kept)
    events = runtime.table(names.TABLE_MEMORIES).meta.client.meta.events

    def conflict(**_: Any) -> tuple[AWSResponse, dict[str, Any]]:
        reasons = [{"Code": "None"}, {"Code": "TransactionConflict"}]
        error = {"Code": "TransactionCanceledException", "Message": "conflict"}
        return AWSResponse("https://dynamodb", 400, {}, None), {
            "Error": error,
            "CancellationReasons": reasons,
        }

    events.register("before-call.dynamodb.TransactWriteItems", conflict)
    try:
        with pytest.raises(ClientError):
            store.delete("alpha", kept)
    finally:
        events.unregister("before-call.dynamodb.TransactWriteItems", conflict)
    assert store.get("alpha", kept.id) == kept
    assert store.get_by_key("alpha", "k") == kept
    store.delete("alpha", kept)
    assert store.get_by_key("alpha", "k") is None
