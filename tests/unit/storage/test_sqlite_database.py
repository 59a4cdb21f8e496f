"""The embedded database's write transactions: one writer at a time, never a deadlock."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from shared.storage.sqlite import Database


@pytest.fixture
def db(tmp_path: Path) -> Database:
    database = Database(tmp_path / "cairn.db")
    with database.write() as tx:
        tx.execute("CREATE TABLE counter (k TEXT PRIMARY KEY, n INTEGER NOT NULL)")
        tx.execute("INSERT INTO counter VALUES ('a', 0)")
    return database


def test_a_nested_write_is_an_error_not_a_deadlock(db: Database) -> None:
    with (
        pytest.raises(sqlite3.OperationalError, match="within a transaction"),
        db.write(),
        db.write(),
    ):
        pass
    # The outer transaction rolled back and the lock is free for the next writer.
    with db.write() as tx:
        tx.execute("UPDATE counter SET n = n + 1")
    assert db.connection().execute("SELECT n FROM counter").fetchone()["n"] == 1


def test_concurrent_read_modify_writes_lose_no_update(db: Database) -> None:
    # A read then a write in one transaction, from 16 threads at once: every increment lands.
    def bump() -> None:
        for _ in range(50):
            with db.write() as tx:
                n = tx.execute("SELECT n FROM counter WHERE k = 'a'").fetchone()["n"]
                tx.execute("UPDATE counter SET n = ? WHERE k = 'a'", (n + 1,))

    threads = [threading.Thread(target=bump) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert db.connection().execute("SELECT n FROM counter").fetchone()["n"] == 16 * 50


def test_a_failed_write_releases_the_writer(db: Database) -> None:
    def fail_half_way() -> None:
        with db.write() as tx:
            tx.execute("UPDATE counter SET n = 99")
            raise RuntimeError("the store method failed half way")

    with pytest.raises(RuntimeError):
        fail_half_way()
    done = threading.Event()

    def write_from_another_thread() -> None:
        with db.write() as tx:
            tx.execute("UPDATE counter SET n = n + 1")
        done.set()

    threading.Thread(target=write_from_another_thread).start()
    assert done.wait(timeout=10)
    assert db.connection().execute("SELECT n FROM counter").fetchone()["n"] == 1


def test_a_durable_write_returns_only_after_an_fsync_that_began_after_its_commit(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Group commit: many writers share fsyncs, and none returns before one covers it."""
    fsyncs: list[int] = []
    original = db._fsync_wal

    def counted_fsync() -> None:
        # What has been committed when this fsync begins is what it makes durable.
        fsyncs.append(db._committed)
        original()

    monkeypatch.setattr(db, "_fsync_wal", counted_fsync)
    waited = db._wait_durable
    returned: list[tuple[int, int]] = []
    guard = threading.Lock()

    def recorded_wait(commit: int) -> None:
        waited(commit)
        with guard:  # (this write's commit number, commits known durable as it returns)
            returned.append((commit, db._synced))

    monkeypatch.setattr(db, "_wait_durable", recorded_wait)
    barrier = threading.Barrier(16)

    def writer() -> None:
        barrier.wait()
        for _ in range(10):
            with db.write() as tx:
                tx.execute("UPDATE counter SET n = n + 1 WHERE k = 'a'")

    threads = [threading.Thread(target=writer) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert db.connection().execute("SELECT n FROM counter").fetchone()[0] == 160
    assert len(returned) == 160
    # No write returned before an fsync covering its commit had ended; fsyncs were shared.
    assert all(synced >= commit for commit, synced in returned)
    assert max(fsyncs) == db._committed
    assert len(fsyncs) < 160


def test_a_scratch_write_does_not_wait_for_the_disk(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    fsyncs: list[int] = []
    monkeypatch.setattr(db, "_fsync_wal", lambda: fsyncs.append(1))
    with db.write(durable=False) as tx:
        tx.execute("UPDATE counter SET n = n + 1 WHERE k = 'a'")
    assert fsyncs == []
    with db.write() as tx:
        tx.execute("UPDATE counter SET n = n + 1 WHERE k = 'a'")
    assert fsyncs == [1]
