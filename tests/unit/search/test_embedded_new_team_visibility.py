"""The embedded index's readers never see a write before it commits, nor keep what they read
from before a write past it.

Each team's BM25 rows live in an FTS table created by that team's first `index()`. The CREATE
is part of the write transaction, so another thread's connection cannot see the table before
COMMIT. A reader told of the table earlier (it once was: the name was published at CREATE)
fails with "no such table" — CI caught that race in the concurrent contract test. Here the
writer is held inside its transaction, deterministically, while a reader queries the new team.
Likewise a team's row count, cached until its next write, must not be stored by a reader that
counted before that write committed.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import overload

import numpy as np
import pytest

from shared.search.adapters.embedded import EmbeddedIndex, fts_table
from shared.search.models import ChunkDoc, IndexQuery, SearchFilters

DIMS = 4


# `index()` walks its chunks three times: their teams, the entities to replace (inside the
# transaction), then the inserts. Should that change, the interrupt never fires and both tests
# fail (a wait times out, or nothing raises) rather than pass without testing anything.
INSERT_PASS = 3


class InterruptedChunks(Sequence[ChunkDoc]):
    """Chunks whose insert pass calls `interrupt` after the first chunk: that chunk's rows are
    written and its team's FTS table created, and nothing is committed yet."""

    def __init__(self, chunks: list[ChunkDoc], interrupt: Callable[[], None]) -> None:
        self.chunks = chunks
        self.interrupt = interrupt
        self.passes = 0

    def __len__(self) -> int:
        return len(self.chunks)

    @overload
    def __getitem__(self, i: int) -> ChunkDoc: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[ChunkDoc]: ...
    def __getitem__(self, i: int | slice) -> ChunkDoc | Sequence[ChunkDoc]:
        return self.chunks[i]

    def __iter__(self) -> Iterator[ChunkDoc]:
        self.passes += 1
        for n, item in enumerate(self.chunks):
            if self.passes == INSERT_PASS and n == 1:
                self.interrupt()
            yield item


def chunk(i: int, team: str) -> ChunkDoc:
    return ChunkDoc(
        team=team,
        entity_id=f"e{i}",
        chunk_id=f"e{i}:0",
        chunk_index=0,
        text=f"glacier moraine note {i}",
        title="",
        source="notes",
        result_type="memory",
    )


def ask(index: EmbeddedIndex, team: str) -> list[str]:
    query = IndexQuery(
        text="glacier moraine", vector=[1.0] * DIMS, filters=SearchFilters(team=team, now=0.0)
    )
    return sorted(group.entity_id for group in index.query(query).groups)


VECTORS = np.ones((2, DIMS), dtype=np.float32)


def test_a_reader_during_a_new_teams_first_write_sees_nothing_then_everything(
    tmp_path: Path,
) -> None:
    index = EmbeddedIndex(tmp_path, DIMS)
    inside_transaction, release = threading.Event(), threading.Event()

    def pause() -> None:
        inside_transaction.set()
        assert release.wait(10)

    chunks = InterruptedChunks([chunk(0, "fresh"), chunk(1, "fresh")], pause)
    failures: list[BaseException] = []

    def write() -> None:
        try:
            index.index(chunks, VECTORS)
        except BaseException as exc:  # pragma: no cover - reported below
            failures.append(exc)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        assert inside_transaction.wait(10)
        assert ask(index, "fresh") == []  # not "no such table"
    finally:
        release.set()
        writer.join(10)
    assert not failures, failures
    assert ask(index, "fresh") == ["e0", "e1"]


def test_a_rolled_back_first_write_leaves_no_table_and_the_next_write_creates_it(
    tmp_path: Path,
) -> None:
    index = EmbeddedIndex(tmp_path, DIMS)

    def fail() -> None:
        raise RuntimeError("the write fails inside its transaction")

    failing = InterruptedChunks([chunk(0, "fresh"), chunk(1, "fresh")], fail)
    with pytest.raises(RuntimeError):
        index.index(failing, VECTORS)
    assert ask(index, "fresh") == []
    index.index([chunk(0, "fresh"), chunk(1, "fresh")], VECTORS)
    assert ask(index, "fresh") == ["e0", "e1"]


class CountingDuringAWrite(EmbeddedIndex):
    """An index whose readers' row count lets another thread's write commit meanwhile."""

    write_during_count: Callable[[], None] | None = None

    def _reader(self) -> sqlite3.Connection:
        conn = super()._reader()
        hook, self.write_during_count = self.write_during_count, None
        if hook is None:
            return conn
        return _AfterCount(conn, hook)  # type: ignore[return-value]


class _AfterCount:
    def __init__(self, conn: sqlite3.Connection, hook: Callable[[], None]) -> None:
        self.conn, self.hook = conn, hook

    def execute(self, sql: str, params: Sequence[object] = ()) -> sqlite3.Cursor:
        cursor = self.conn.execute(sql, params)
        if sql.startswith("SELECT COUNT(*) FROM chunks"):
            self.hook()
        return cursor


def test_a_count_read_before_a_write_commits_is_not_cached_past_it(tmp_path: Path) -> None:
    index = CountingDuringAWrite(tmp_path, DIMS)
    index.index([chunk(0, "team")], VECTORS[:1])

    def write() -> None:
        thread = threading.Thread(target=index.index, args=([chunk(1, "team")], VECTORS[:1]))
        thread.start()
        thread.join(10)

    index.write_during_count = write
    table = fts_table("team")
    assert index._terms("team", table, "glacier moraine")[2] == 1  # counted before the write
    assert index._terms("team", table, "glacier moraine")[2] == 2  # not the stale cached 1
