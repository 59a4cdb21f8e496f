"""`cairn backup`'s copy: online (while another connection writes), consistent, whole
(`PRAGMA integrity_check`), and put back by restore with what it held."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from shared.portability.backup import BackupFailed, backup, integrity, restore
from shared.storage.sqlite import Database


def rows(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        count: int = conn.execute("SELECT count(*) FROM notes").fetchone()[0]
        return count
    finally:
        conn.close()


def test_a_copy_taken_while_writes_go_on_is_whole_and_restores(tmp_path: Path) -> None:
    db = Database(tmp_path / "data" / "cairn.db")
    with db.write() as tx:
        tx.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
    stop = threading.Event()

    def writer() -> None:
        number = 0
        while not stop.is_set():
            with db.write(durable=False) as tx:
                tx.executemany(
                    "INSERT INTO notes (body) VALUES (?)", [(f"note {number}" * 20,)] * 50
                )
            number += 1

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        while rows(db.path) < 500:
            pass
        report = backup(db.path, tmp_path / "copy.db", search_index=None)
    finally:
        stop.set()
        thread.join()
    copied = rows(tmp_path / "copy.db")
    assert copied >= 500
    assert copied % 50 == 0  # whole transactions only
    assert integrity(tmp_path / "copy.db") == "ok"
    assert report.to_dict()["integrity"] == "ok"
    assert not Path(f"{tmp_path / 'copy.db'}-wal").exists()  # standalone: no WAL beside it
    db.close()

    index = tmp_path / "data" / "search" / "index.sqlite3"
    done = restore(tmp_path / "copy.db", db.path, index)
    assert rows(db.path) == copied
    assert done["search_index"] == "removed: run embeddings_build"


def test_the_index_travels_beside_the_copy(tmp_path: Path) -> None:
    for name in ("cairn.db", "index.sqlite3"):
        conn = sqlite3.connect(tmp_path / name)
        conn.execute("CREATE TABLE notes (body TEXT)")
        conn.execute("INSERT INTO notes VALUES (?)", (name,))
        conn.commit()
        conn.close()
    report = backup(tmp_path / "cairn.db", tmp_path / "b" / "x.db", tmp_path / "index.sqlite3")
    assert report.search_index == tmp_path / "b" / "x.db.search.sqlite3"
    restored = tmp_path / "restored"
    restored.mkdir()
    done = restore(tmp_path / "b" / "x.db", restored / "cairn.db", restored / "index.sqlite3")
    assert done["search_index"] == "restored"
    assert rows(restored / "index.sqlite3") == 1


def test_a_damaged_backup_is_not_restored(tmp_path: Path) -> None:
    damaged = tmp_path / "damaged.db"
    conn = sqlite3.connect(damaged)
    conn.execute("CREATE TABLE notes (body TEXT)")
    conn.executemany("INSERT INTO notes VALUES (?)", [("x" * 500,)] * 200)
    conn.commit()
    conn.close()
    raw = bytearray(damaged.read_bytes())
    raw[4096 + 100 : 4096 + 4000] = b"\xff" * 3900
    damaged.write_bytes(bytes(raw))
    target = tmp_path / "cairn.db"
    target.write_bytes(b"the current database")
    with pytest.raises(BackupFailed, match="integrity check"):
        restore(damaged, target, tmp_path / "index.sqlite3")
    assert target.read_bytes() == b"the current database"


def test_a_backup_onto_the_database_itself_is_refused(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "cairn.db")
    conn.close()
    with pytest.raises(BackupFailed, match="overwrite the database itself"):
        backup(tmp_path / "cairn.db", tmp_path / "cairn.db", None)
