"""The DocumentStore contract (the search source of truth), on DynamoDB (moto) and SQLite alike."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from shared.search.adapters import sqlite_documents
from shared.search.models import ChunkItem, EntityItem
from shared.search.ports import DocumentStore
from shared.search.wiring import build_document_store
from tests.unit.storage.conftest import Backend

NOW = 1_800_000_000.0
DAY = 24 * 3600


class Clock:
    """Seconds since the epoch, moved by the test (tombstone expiry is 30 days away)."""

    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> float:
        return self.now


def entity(entity_id: str, chunk_count: int, **fields: object) -> EntityItem:
    values: dict[str, object] = {
        "id": entity_id,
        "title": f"title of {entity_id}",
        "source": "local_files",
        "source_id": f"path/{entity_id}.md",
        "content_hash": f"hash-{entity_id}-{chunk_count}",
        "chunk_count": chunk_count,
        "updated_at": "2026-11-01T12:00:00Z",
    }
    values.update(fields)
    return EntityItem.model_validate(values)


def chunks(entity_id: str, count: int, version: str = "v1") -> list[ChunkItem]:
    return [
        ChunkItem(
            entity_id=entity_id,
            chunk_index=index,
            content=f"{version} chunk {index} of {entity_id}",
            char_offset_start=index * 10,
            char_offset_end=index * 10 + 9,
            heading="Heading" if index % 2 else None,
        )
        for index in range(count)
    ]


def put(store: DocumentStore, team: str, entity_id: str, count: int, **fields: object) -> None:
    store.put_entity(team, entity(entity_id, count, **fields), chunks(entity_id, count))


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store(backend: Backend, clock: Clock) -> DocumentStore:
    return build_document_store(clock)


def test_an_entity_and_its_chunks_read_back_whole(store: DocumentStore) -> None:
    stored = entity("e1", 3, uri="file:///e1.md", tags=["a", "b"], sensitivity="internal")
    store.put_entity("alpha", stored, chunks("e1", 3))
    assert store.get_entity("alpha", "e1") == stored
    assert store.chunks("alpha", "e1") == chunks("e1", 3)


def test_an_unknown_entity_is_none_and_has_no_chunks(store: DocumentStore) -> None:
    assert store.get_entity("alpha", "nope") is None
    assert store.chunks("alpha", "nope") == []
    assert store.chunk_range("alpha", "nope", 0, 5) == []


def test_reads_are_confined_to_the_team(store: DocumentStore) -> None:
    put(store, "alpha", "e1", 2)
    assert store.get_entity("beta", "e1") is None
    assert store.chunks("beta", "e1") == []
    assert store.chunk_range("beta", "e1", 0, 1) == []
    assert list(store.iter_entities("beta")) == []
    store.mark_deleted("beta", "e1", "2026-11-02T00:00:00Z")
    alpha = store.get_entity("alpha", "e1")
    assert alpha is not None
    assert not alpha.deleted
    assert len(store.chunks("alpha", "e1")) == 2


def test_chunks_come_in_index_order_past_the_padding_width(store: DocumentStore) -> None:
    put(store, "alpha", "e1", 12)
    assert [c.chunk_index for c in store.chunks("alpha", "e1")] == list(range(12))


def test_a_chunk_range_is_inclusive_and_clipped(store: DocumentStore) -> None:
    put(store, "alpha", "e1", 6)
    assert [c.chunk_index for c in store.chunk_range("alpha", "e1", 2, 4)] == [2, 3, 4]
    assert [c.chunk_index for c in store.chunk_range("alpha", "e1", -3, 1)] == [0, 1]
    assert [c.chunk_index for c in store.chunk_range("alpha", "e1", 4, 99)] == [4, 5]
    assert store.chunk_range("alpha", "e1", 4, 3) == []


def test_a_chunk_range_does_not_reach_into_an_entity_whose_id_extends_it(
    store: DocumentStore,
) -> None:
    put(store, "alpha", "e1", 2)
    put(store, "alpha", "e10", 2)
    assert {c.entity_id for c in store.chunks("alpha", "e1")} == {"e1"}
    assert {c.entity_id for c in store.chunk_range("alpha", "e1", 0, 9)} == {"e1"}


def test_putting_again_replaces_every_chunk(store: DocumentStore) -> None:
    put(store, "alpha", "e1", 5)
    store.put_entity("alpha", entity("e1", 2), chunks("e1", 2, version="v2"))
    assert store.chunks("alpha", "e1") == chunks("e1", 2, version="v2")
    stored = store.get_entity("alpha", "e1")
    assert stored is not None
    assert stored.chunk_count == 2


def test_a_deleted_entity_is_a_tombstone_without_chunks(store: DocumentStore) -> None:
    put(store, "alpha", "e1", 3)
    store.mark_deleted("alpha", "e1", "2026-11-02T00:00:00Z")
    tombstone = store.get_entity("alpha", "e1")
    assert tombstone is not None
    assert tombstone.deleted
    assert tombstone.chunk_count == 0
    assert tombstone.updated_at == "2026-11-02T00:00:00Z"
    assert tombstone.content_hash == "hash-e1-3"
    assert store.chunks("alpha", "e1") == []
    assert [e.id for e in store.iter_entities("alpha")] == []


def test_deleting_an_unknown_entity_writes_nothing(store: DocumentStore) -> None:
    store.mark_deleted("alpha", "nope", "2026-11-02T00:00:00Z")
    assert store.get_entity("alpha", "nope") is None


def test_a_tombstone_is_gone_once_it_expires(store: DocumentStore, clock: Clock) -> None:
    put(store, "alpha", "e1", 1)
    store.mark_deleted("alpha", "e1", "2026-11-02T00:00:00Z")
    clock.now = NOW + 30 * DAY - 1
    assert store.get_entity("alpha", "e1") is not None
    clock.now = NOW + 30 * DAY
    assert store.get_entity("alpha", "e1") is None
    # Deleting again after expiry finds nothing to tombstone.
    store.mark_deleted("alpha", "e1", "2026-12-15T00:00:00Z")
    assert store.get_entity("alpha", "e1") is None


def test_a_deleted_entity_put_again_is_live_and_never_expires(
    store: DocumentStore, clock: Clock
) -> None:
    put(store, "alpha", "e1", 2)
    store.mark_deleted("alpha", "e1", "2026-11-02T00:00:00Z")
    put(store, "alpha", "e1", 2)
    clock.now = NOW + 365 * DAY
    revived = store.get_entity("alpha", "e1")
    assert revived is not None
    assert not revived.deleted
    assert len(store.chunks("alpha", "e1")) == 2
    assert [e.id for e in store.iter_entities("alpha")] == ["e1"]


def test_live_entities_list_in_id_order_optionally_by_source(store: DocumentStore) -> None:
    for entity_id, source in (("b", "notes"), ("a", "local_files"), ("é", "notes"), ("B", "x")):
        put(store, "alpha", entity_id, 1, source=source)
    put(store, "alpha", "c", 1)
    store.mark_deleted("alpha", "c", "2026-11-02T00:00:00Z")
    assert [e.id for e in store.iter_entities("alpha")] == ["B", "a", "b", "é"]
    assert [e.id for e in store.iter_entities("alpha", "notes")] == ["b", "é"]
    assert list(store.iter_entities("alpha", "unknown")) == []


def test_listing_many_entities_returns_each_once(
    store: DocumentStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite lists entities in keyset batches, made 4 rows here: 11 entities cross two batch
    boundaries and end in a short batch, as 1203 did with the real 500 (without 1203 writes
    through moto, 15-20 s)."""
    monkeypatch.setattr(sqlite_documents, "_ENTITY_BATCH", 4)
    ids = [f"doc-{n:04d}" for n in range(11)]
    for entity_id in ids:
        store.put_entity("alpha", entity(entity_id, 0), [])
    assert [e.id for e in store.iter_entities("alpha")] == ids


def test_concurrent_puts_of_one_entity_leave_one_whole_version(
    backend: Backend, store: DocumentStore
) -> None:
    """Each put replaces the record and chunks together, so the survivor is never a mix."""
    if not backend.is_sqlite:
        pytest.skip("an entity's put is one transaction only in SQLite (DynamoDB: a batch)")
    barrier = threading.Barrier(6)

    def write(version: int) -> None:
        barrier.wait()
        for _ in range(10):
            store.put_entity(
                "alpha",
                entity("e1", version, content_hash=f"v{version}"),
                chunks("e1", version, version=f"v{version}"),
            )

    threads = [threading.Thread(target=write, args=(n,)) for n in range(1, 7)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    stored = store.get_entity("alpha", "e1")
    assert stored is not None
    assert store.chunks("alpha", "e1") == chunks(
        "e1", stored.chunk_count, version=stored.content_hash
    )


def test_an_old_snapshot_migrates_into_sqlite(
    backend: Backend, clock: Clock, tmp_path: Path
) -> None:
    """Items the DynamoDB adapter wrote read back the same from SQLite after `migrate_items`."""
    if backend.is_sqlite:
        pytest.skip("the source of a migration is the DynamoDB layout")
    from shared.config import names
    from shared.search.adapters.sqlite_documents import SqliteDocumentStore
    from shared.storage.sqlite import Database

    dynamo = build_document_store(clock)
    put(dynamo, "alpha", "e1", 3, tags=["t"], uri="file:///e1")
    put(dynamo, "alpha", "e2", 2, source="notes")
    put(dynamo, "beta", "e1", 1)
    dynamo.mark_deleted("alpha", "e2", "2026-11-02T00:00:00Z")
    items = list(backend.table(names.TABLE_DOCUMENTS).scan()["Items"])
    sqlite = SqliteDocumentStore(Database(tmp_path / "migrated.db"), clock)
    # 3 entities + 4 chunks; the foreign record type is ignored.
    assert sqlite.migrate_items([*items, {"pk": "TEAM#alpha", "sk": "OTHER#x"}]) == 7
    for team, entity_id in (("alpha", "e1"), ("alpha", "e2"), ("beta", "e1")):
        assert sqlite.get_entity(team, entity_id) == dynamo.get_entity(team, entity_id)
        assert sqlite.chunks(team, entity_id) == dynamo.chunks(team, entity_id)
    assert [e.id for e in sqlite.iter_entities("alpha")] == ["e1"]
    # The tombstone's TTL came along: it expires in SQLite when it would in DynamoDB.
    clock.now = NOW + 30 * DAY
    assert sqlite.get_entity("alpha", "e2") is None
    assert dynamo.get_entity("alpha", "e2") is None
