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
