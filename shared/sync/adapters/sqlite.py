"""Connector state and the sync lock in the embedded database.

The lock is a lease row per team. Taking it is one upsert whose update only applies when the
lease has expired (`INSERT … ON CONFLICT DO UPDATE … WHERE lease_expires < now`), inside a
`BEGIN IMMEDIATE` transaction: its row count says whether this caller won, exactly once across
threads and processes.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from shared.storage.sqlite import Database, Migration

MIGRATIONS = (
    Migration(
        "sync",
        1,
        (
            # One lease per team; the primary key is the only lookup.
            "CREATE TABLE sync_locks ("
            " team TEXT PRIMARY KEY, holder TEXT NOT NULL, lease_expires INTEGER NOT NULL)",
            # Last sync per (team, source); sync_status reads a team's rows by the key's prefix.
            "CREATE TABLE sync_connectors ("
            " team TEXT NOT NULL, source TEXT NOT NULL, last_sync TEXT NOT NULL,"
            " PRIMARY KEY (team, source))",
        ),
    ),
)

_TAKE_LOCK = (
    "INSERT INTO sync_locks (team, holder, lease_expires) VALUES (?, ?, ?)"
    " ON CONFLICT (team) DO UPDATE SET holder = excluded.holder,"
    " lease_expires = excluded.lease_expires WHERE sync_locks.lease_expires < ?"
)
_MIGRATE_LOCK = "INSERT OR IGNORE INTO sync_locks (team, holder, lease_expires) VALUES (?, ?, ?)"
_RECORD_SYNC = (
    "INSERT INTO sync_connectors (team, source, last_sync) VALUES (?, ?, ?)"
    " ON CONFLICT (team, source) DO UPDATE SET last_sync = excluded.last_sync"
)


class SqliteSyncState:
    """`SyncState` on the embedded database."""

    def __init__(self, db: Database) -> None:
        self._db = db
        db.migrate(MIGRATIONS)

    def acquire_lock(self, team: str, holder: str, now: datetime, lease_seconds: int) -> bool:
        moment = int(now.timestamp())
        with self._db.write() as tx:
            taken = tx.execute(_TAKE_LOCK, (team, holder, moment + lease_seconds, moment)).rowcount
        return taken == 1

    def release_lock(self, team: str, holder: str) -> None:
        with self._db.write() as tx:
            # Never release a lock taken over meanwhile: only the holder's row goes.
            tx.execute("DELETE FROM sync_locks WHERE team = ? AND holder = ?", (team, holder))

    def record_sync(self, team: str, source: str, finished_at: datetime) -> None:
        with self._db.write() as tx:
            tx.execute(_RECORD_SYNC, (team, source, finished_at.isoformat()))

    def last_syncs(self, team: str) -> dict[str, datetime]:
        rows = (
            self._db.connection()
            .execute("SELECT source, last_sync FROM sync_connectors WHERE team = ?", (team,))
            .fetchall()
        )
        return {row["source"]: datetime.fromisoformat(row["last_sync"]) for row in rows}

    def migrate_items(self, items: Iterable[dict[str, Any]]) -> int:
        """Import the lock and connector items of the old DynamoDB-shaped snapshot (other items
        are ignored)."""
        imported = 0
        with self._db.write() as tx:
            for item in items:
                sort_key = str(item.get("sk", ""))
                team = str(item.get("pk", "")).removeprefix("TEAM#")
                if sort_key == "LOCK#sync":
                    tx.execute(
                        _MIGRATE_LOCK, (team, str(item["holder"]), int(item["lease_expires"]))
                    )
                elif sort_key.startswith("CONNECTOR#"):
                    tx.execute(
                        "INSERT OR IGNORE INTO sync_connectors (team, source, last_sync)"
                        " VALUES (?, ?, ?)",
                        (team, str(item["source"]), str(item["last_sync"])),
                    )
                else:
                    continue
                imported += 1
        return imported
