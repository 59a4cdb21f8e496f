"""`cairn backup` and `cairn restore`: consistent copies of the local SQLite files.

A copy is made with SQLite's online backup API, never by copying the file: the database runs
in WAL mode, where the main file alone can miss committed transactions still in `cairn.db-wal`
and a file copy during a checkpoint can be torn. The backup API reads one snapshot under a read
transaction (writers carry on meanwhile) and writes a whole database, checked with
`PRAGMA integrity_check` before it is called done.
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

SEARCH_SUFFIX = ".search.sqlite3"


class BackupFailed(Exception):
    """The copy could not be made or does not pass SQLite's integrity check."""


@dataclass(frozen=True)
class BackupReport:
    database: Path
    database_bytes: int
    search_index: Path | None

    def to_dict(self) -> dict[str, object]:
        return {
            "database": str(self.database),
            "bytes": self.database_bytes,
            "integrity": "ok",
            "search_index": str(self.search_index) if self.search_index else None,
        }


def integrity(path: Path) -> str:
    """`PRAGMA integrity_check` of the database at `path` ('ok' when whole)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = conn.execute("PRAGMA integrity_check").fetchall()
    except sqlite3.DatabaseError as exc:  # not a database at all, or its header is damaged
        return str(exc)
    finally:
        conn.close()
    return "; ".join(str(r[0]) for r in rows)


def copy_database(source: Path, target: Path) -> None:
    """Copy the live database `source` to `target` (replaced whole, atomically)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    partial.unlink(missing_ok=True)
    src = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
    dst = sqlite3.connect(partial)
    try:
        src.backup(dst)  # one step: a single consistent snapshot
        # A standalone copy: no WAL beside it to lose when it is moved or mailed.
        dst.execute("PRAGMA journal_mode = DELETE")
    finally:
        dst.close()
        src.close()
    if (found := integrity(partial)) != "ok":
        partial.unlink(missing_ok=True)
        raise BackupFailed(f"the copy of {source} fails SQLite's integrity check: {found}")
    os.replace(partial, target)


def backup(database: Path, target: Path, search_index: Path | None) -> BackupReport:
    """Copy `database` to `target` and, when there is one, the search index beside it
    (`<target>.search.sqlite3`; without it a restore rebuilds the index)."""
    if target.resolve() == database.resolve():
        raise BackupFailed("the backup would overwrite the database itself: name another file")
    copy_database(database, target)
    index_copy: Path | None = None
    if search_index is not None and search_index.exists():
        index_copy = target.with_name(target.name + SEARCH_SUFFIX)
        copy_database(search_index, index_copy)
    return BackupReport(target, target.stat().st_size, index_copy)


def restore(backup_file: Path, database: Path, search_index: Path) -> dict[str, object]:
    """Put a backup back in place of `database` (the server must not be running: the caller
    holds the data folder's lock). The search index comes from the copy beside the backup,
    else it is removed, to be rebuilt (`embeddings_build`)."""
    if (found := integrity(backup_file)) != "ok":
        raise BackupFailed(f"{backup_file} fails SQLite's integrity check: {found}")
    for stale in (Path(f"{database}-wal"), Path(f"{database}-shm")):
        stale.unlink(missing_ok=True)
    copy_database(backup_file, database)
    index_copy = backup_file.with_name(backup_file.name + SEARCH_SUFFIX)
    for stale in (search_index, Path(f"{search_index}-wal"), Path(f"{search_index}-shm")):
        stale.unlink(missing_ok=True)
    if index_copy.exists():
        copy_database(index_copy, search_index)
    return {
        "database": str(database),
        "search_index": "restored" if index_copy.exists() else "removed: run embeddings_build",
    }
