"""A worker thread's SQLite connections (the database's and the search index's) go back to a
pool when the thread ends, so threads that come and go — a pool that grows for stuck calls and
shrinks again — never pile up open files (closing them would not do: in WAL mode SQLite keeps a
closed connection's file descriptor while another connection of the process holds a lock)."""

from __future__ import annotations

import gc
import os
import threading
from pathlib import Path

import numpy as np

from shared.search.adapters.embedded import EmbeddedIndex
from shared.search.models import ChunkDoc, IndexQuery, SearchFilters
from shared.storage.sqlite import Database


def _open_files() -> int:
    return len(os.listdir("/proc/self/fd"))


def _in_threads(work: object, rounds: int = 20, at_once: int = 8) -> None:
    for _ in range(rounds):
        threads = [threading.Thread(target=work) for _ in range(at_once)]  # type: ignore[arg-type]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
    gc.collect()


def test_the_database_reuses_a_finished_threads_connection_and_open_files_stay_flat(
    tmp_path: Path,
) -> None:
    database = Database(tmp_path / "cairn.db")
    with database.write() as tx:
        tx.execute("CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER)")

    def work() -> None:
        with database.write() as tx:
            tx.execute(
                "INSERT INTO t VALUES (?, 1) ON CONFLICT(k) DO UPDATE SET v = v + 1",
                (threading.current_thread().name,),
            )
        database.connection().execute("SELECT COUNT(*) FROM t").fetchone()

    _in_threads(work, rounds=10)  # the pools warm up to what 8 threads at once need
    before = _open_files()
    _in_threads(work, rounds=40)  # 320 more threads, 8 at a time

    # A bounded pool: about the threads that used it at once (8), not the 400 that did.
    assert database.open_connections <= 16
    # Flat: a finished thread's locals (and its connection's return) may trail its join by a
    # moment, so a round can open one or two more; a leak opened one or two per thread (+80).
    assert _open_files() <= before + 8
    database.close()


def test_the_search_index_reuses_a_finished_threads_reader_and_open_files_stay_flat(
    tmp_path: Path,
) -> None:
    index = EmbeddedIndex(tmp_path, 4)
    doc = ChunkDoc(
        team="alpha",
        entity_id="e",
        chunk_id="e:0",
        chunk_index=0,
        text="glacier moraine",
        title="",
        source="notes",
        result_type="memory",
    )
    index.index([doc], np.ones((1, 4), dtype=np.float32))
    query = IndexQuery(
        text="glacier", vector=[1.0] * 4, filters=SearchFilters(team="alpha", now=0.0)
    )

    def work() -> None:
        assert index.query(query).groups

    _in_threads(work, rounds=10)  # the pools warm up to what 8 threads at once need
    before = _open_files()
    _in_threads(work, rounds=40)

    # Flat: a finished thread's locals (and its connection's return) may trail its join by a
    # moment, so a round can open one or two more; a leak opened one or two per thread (+80).
    assert _open_files() <= before + 8
