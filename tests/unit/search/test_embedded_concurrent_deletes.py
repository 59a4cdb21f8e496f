"""A search never fails because a row it ranked was deleted before it read it.

The embedded index ranks rows (BM25, vectors), then reads the winners' columns. A writer that
retracts or re-indexes an entity in between leaves the reader with a rowid that no longer
exists: that row is skipped (and an entity left with none is left out), never a KeyError (which
the caller saw as -32603). First one deterministic interleaving, then readers and writers at once.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from shared.search.adapters.embedded import EmbeddedIndex
from shared.search.models import ChunkDoc, IndexQuery, SearchFilters

DIMS = 4
TEAM = "alpha"


def chunk(entity: str, n: int = 0) -> ChunkDoc:
    return ChunkDoc(
        team=TEAM,
        entity_id=entity,
        chunk_id=f"{entity}:{n}",
        chunk_index=n,
        text=f"glacier moraine note {entity} part {n}",
        title="",
        source="notes",
        result_type="memory",
    )


def ask(index: EmbeddedIndex) -> list[str]:
    query = IndexQuery(
        text="glacier moraine", vector=[1.0] * DIMS, filters=SearchFilters(team=TEAM, now=0.0)
    )
    return [group.entity_id for group in index.query(query).groups]


class DeletingBeforeTheRead(EmbeddedIndex):
    """An index that deletes `victim` after ranking and before reading the ranked rows."""

    victim: str | None = None

    def _records(self, rowids: list[int]) -> dict[int, tuple[Any, ...]]:
        if self.victim is not None:
            victim, self.victim = self.victim, None
            self.delete_entity(TEAM, victim)
        return super()._records(rowids)


def test_a_row_deleted_between_the_ranking_and_the_read_is_skipped(tmp_path: Path) -> None:
    # Given three indexed entities, two chunks each
    index = DeletingBeforeTheRead(tmp_path, DIMS)
    chunks = [chunk(entity, n) for entity in ("a", "b", "c") for n in (0, 1)]
    index.index(chunks, np.ones((len(chunks), DIMS), dtype=np.float32))
    assert sorted(ask(index)) == ["a", "b", "c"]

    # When "b" is deleted after the query ranked it and before it read its rows
    index.victim = "b"
    found = ask(index)

    # Then the answer leaves "b" out, and nothing fails
    assert sorted(found) == ["a", "c"]
    assert ask(index) == found


def test_readers_and_retracting_writers_at_once_never_fail(tmp_path: Path) -> None:
    # Given a few entities always present, and 2 writers indexing then deleting their own
    index = EmbeddedIndex(tmp_path, DIMS)
    stable = [chunk(f"s{i}") for i in range(5)]
    index.index(stable, np.ones((len(stable), DIMS), dtype=np.float32))
    stop = threading.Event()
    failures: list[BaseException] = []
    counts = {"reads": 0, "writes": 0}
    lock = threading.Lock()

    def writer(name: str) -> None:
        n = 0
        while not stop.is_set():
            entity = f"{name}-{n}"
            mine = [chunk(entity, 0), chunk(entity, 1)]
            try:
                index.index(mine, np.ones((2, DIMS), dtype=np.float32))
                index.delete_entity(TEAM, entity)
            except BaseException as exc:  # pragma: no cover - reported below
                failures.append(exc)
                return
            n += 1
            with lock:
                counts["writes"] += 1

    def reader() -> None:
        while not stop.is_set():
            try:
                found = ask(index)
            except BaseException as exc:  # pragma: no cover - reported below
                failures.append(exc)
                return
            # The stable entities are always found, whatever the writers do meanwhile.
            assert {f"s{i}" for i in range(5)} <= set(found), found
            with lock:
                counts["reads"] += 1

    # When 8 readers and 2 writers run together for a bounded time
    threads = [threading.Thread(target=writer, args=(f"w{i}",)) for i in range(2)]
    threads += [threading.Thread(target=reader) for _ in range(8)]
    for thread in threads:
        thread.start()
    time.sleep(2.0)
    stop.set()
    for thread in threads:
        thread.join(10)

    # Then no read or write failed, and both really ran
    assert not failures, failures[:3]
    assert all(not thread.is_alive() for thread in threads)
    assert counts["reads"] > 8
    assert counts["writes"] > 2
