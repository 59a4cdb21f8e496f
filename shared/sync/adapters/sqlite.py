"""Connector state and the sync lock in the embedded database.

The lock is a lease row per team. Taking it is one upsert whose update only applies when the
lease has expired (`INSERT … ON CONFLICT DO UPDATE … WHERE lease_expires < now`), inside a
`BEGIN IMMEDIATE` transaction: its row count says whether this caller won, exactly once across
threads and processes.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from shared.storage.snapshot import SnapshotItem, migrate_each
from shared.storage.sqlite import Database, Migration
from shared.sync.models import SyncRun, SyncScheduleView
from shared.sync.ports import SYNC_LOCK
from shared.sync.schedules import schedule_name

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
    Migration(
        "sync",
        2,
        (
            # Background runs; run ids sort by creation time, so the newest are the key's tail.
            "CREATE TABLE sync_runs ("
            " team TEXT NOT NULL, run_id TEXT NOT NULL, body TEXT NOT NULL,"
            " PRIMARY KEY (team, run_id))",
            # The local scheduler's schedules: one per team, read whole on each tick.
            "CREATE TABLE sync_schedules ("
            " team TEXT PRIMARY KEY, expression TEXT NOT NULL, created_at TEXT NOT NULL,"
            " last_fired_at TEXT)",
        ),
    ),
    Migration(
        "sync",
        3,
        (
            # A schedule per connector beside the team-wide one (`source` ''): the key becomes
            # (team, source). The default lets an export made before this import as it was.
            "CREATE TABLE sync_schedules_by_source ("
            " team TEXT NOT NULL, source TEXT NOT NULL DEFAULT '', expression TEXT NOT NULL,"
            " created_at TEXT NOT NULL, last_fired_at TEXT, PRIMARY KEY (team, source))",
            "INSERT INTO sync_schedules_by_source"
            " (team, source, expression, created_at, last_fired_at)"
            " SELECT team, '', expression, created_at, last_fired_at FROM sync_schedules",
            "DROP TABLE sync_schedules",
            "ALTER TABLE sync_schedules_by_source RENAME TO sync_schedules",
        ),
    ),
    Migration(
        "sync",
        4,
        (
            # Locks by name: the team's `sync` lock and each connector's; the key becomes
            # (team, name), and a held sync lock stays held.
            "CREATE TABLE sync_locks_by_name ("
            " team TEXT NOT NULL, name TEXT NOT NULL DEFAULT 'sync', holder TEXT NOT NULL,"
            " lease_expires INTEGER NOT NULL, PRIMARY KEY (team, name))",
            "INSERT INTO sync_locks_by_name (team, name, holder, lease_expires)"
            " SELECT team, 'sync', holder, lease_expires FROM sync_locks",
            "DROP TABLE sync_locks",
            "ALTER TABLE sync_locks_by_name RENAME TO sync_locks",
        ),
    ),
)
# The team-wide schedule's `source` in the table (a key column cannot hold NULL uniquely).
_WHOLE_TEAM = ""

_TAKE_LOCK = (
    "INSERT INTO sync_locks (team, name, holder, lease_expires) VALUES (?, ?, ?, ?)"
    " ON CONFLICT (team, name) DO UPDATE SET holder = excluded.holder,"
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

    def acquire_lock(
        self, team: str, holder: str, now: datetime, lease_seconds: int, *, name: str = SYNC_LOCK
    ) -> bool:
        moment = int(now.timestamp())
        with self._db.write() as tx:
            taken = tx.execute(
                _TAKE_LOCK, (team, name, holder, moment + lease_seconds, moment)
            ).rowcount
        return taken == 1

    def renew_lock(
        self, team: str, holder: str, now: datetime, lease_seconds: int, *, name: str = SYNC_LOCK
    ) -> bool:
        moment = int(now.timestamp())
        with self._db.write() as tx:
            renewed = tx.execute(
                "UPDATE sync_locks SET lease_expires = ? WHERE team = ? AND name = ?"
                " AND holder = ?",
                (moment + lease_seconds, team, name, holder),
            ).rowcount
        return renewed == 1

    def release_lock(self, team: str, holder: str, *, name: str = SYNC_LOCK) -> None:
        with self._db.write() as tx:
            # Never release a lock taken over meanwhile: only the holder's row goes.
            tx.execute(
                "DELETE FROM sync_locks WHERE team = ? AND name = ? AND holder = ?",
                (team, name, holder),
            )

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

    def put_run(self, team: str, run: SyncRun) -> None:
        with self._db.write() as tx:
            tx.execute(
                "INSERT INTO sync_runs (team, run_id, body) VALUES (?, ?, ?)"
                " ON CONFLICT (team, run_id) DO UPDATE SET body = excluded.body",
                (team, run.run_id, run.model_dump_json()),
            )

    def get_run(self, team: str, run_id: str) -> SyncRun | None:
        row = (
            self._db.connection()
            .execute("SELECT body FROM sync_runs WHERE team = ? AND run_id = ?", (team, run_id))
            .fetchone()
        )
        return None if row is None else SyncRun.model_validate_json(row["body"])

    def recent_runs(self, team: str, limit: int) -> list[SyncRun]:
        rows = (
            self._db.connection()
            .execute(
                "SELECT body FROM sync_runs WHERE team = ? ORDER BY run_id DESC LIMIT ?",
                (team, limit),
            )
            .fetchall()
        )
        return [SyncRun.model_validate_json(row["body"]) for row in rows]

    def migrate_items(self, items: Iterable[dict[str, Any]]) -> int:
        """Import the lock and connector items of the old DynamoDB-shaped snapshot (other items
        are ignored)."""

        def write_lock(tx: sqlite3.Connection, item: SnapshotItem) -> None:
            holder, expires = str(item.item["holder"]), int(item.item["lease_expires"])
            tx.execute(_MIGRATE_LOCK, (item.team, holder, expires))

        def write_connector(tx: sqlite3.Connection, item: SnapshotItem) -> None:
            tx.execute(
                "INSERT OR IGNORE INTO sync_connectors (team, source, last_sync) VALUES (?, ?, ?)",
                (item.team, str(item.item["source"]), str(item.item["last_sync"])),
            )

        # The snapshot's only lock is the team's sync lock (`LOCK#sync`: named locks came later).
        return migrate_each(
            self._db, items, {"LOCK#sync": write_lock, "CONNECTOR#": write_connector}
        )


class SqliteScheduleBook:
    """`ScheduleBook` on the embedded database, and what the local scheduler reads: every
    schedule and when it last fired."""

    def __init__(self, db: Database) -> None:
        self._db = db
        db.migrate(MIGRATIONS)

    def put(
        self, team: str, schedule_expression: str, source: str | None = None
    ) -> SyncScheduleView:
        now = datetime.now(UTC).isoformat()
        with self._db.write() as tx:
            # A replaced schedule starts counting afresh from now (as Scheduler's update does).
            tx.execute(
                "INSERT INTO sync_schedules (team, source, expression, created_at, last_fired_at)"
                " VALUES (?, ?, ?, ?, NULL) ON CONFLICT (team, source) DO UPDATE SET"
                " expression = excluded.expression, created_at = excluded.created_at,"
                " last_fired_at = NULL",
                (team, source or _WHOLE_TEAM, schedule_expression, now),
            )
        return SyncScheduleView(
            team=team,
            schedule=schedule_name(team, source),
            expression=schedule_expression,
            state="ENABLED",
            source=source,
        )

    def get(self, team: str, source: str | None = None) -> SyncScheduleView | None:
        row = (
            self._db.connection()
            .execute(
                "SELECT * FROM sync_schedules WHERE team = ? AND source = ?",
                (team, source or _WHOLE_TEAM),
            )
            .fetchone()
        )
        return None if row is None else _schedule_view(row)

    def delete(self, team: str, source: str | None = None) -> bool:
        with self._db.write() as tx:
            gone = tx.execute(
                "DELETE FROM sync_schedules WHERE team = ? AND source = ?",
                (team, source or _WHOLE_TEAM),
            ).rowcount
        return gone == 1

    def team_schedules(self, team: str) -> list[SyncScheduleView]:
        rows = self._db.connection().execute(
            "SELECT * FROM sync_schedules WHERE team = ? ORDER BY source", (team,)
        )
        return [_schedule_view(row) for row in rows.fetchall()]

    def all(self) -> list[tuple[SyncScheduleView, datetime]]:
        """Every schedule with the time its period counts from (last fired, else created)."""
        rows = self._db.connection().execute("SELECT * FROM sync_schedules ORDER BY team, source")
        return [
            (_schedule_view(row), datetime.fromisoformat(row["last_fired_at"] or row["created_at"]))
            for row in rows.fetchall()
        ]

    def mark_fired(
        self, team: str, expression: str, at: datetime, source: str | None = None
    ) -> bool:
        """Record that `team`'s schedule (its connector `source`'s) fired at `at`; False when
        it was replaced or deleted meanwhile (then it must not fire)."""
        with self._db.write() as tx:
            changed = tx.execute(
                "UPDATE sync_schedules SET last_fired_at = ?"
                " WHERE team = ? AND source = ? AND expression = ?",
                (at.isoformat(), team, source or _WHOLE_TEAM, expression),
            ).rowcount
        return changed == 1


def _schedule_view(row: Any) -> SyncScheduleView:
    fired = row["last_fired_at"]
    source = row["source"] or None
    return SyncScheduleView(
        team=row["team"],
        schedule=schedule_name(row["team"], source),
        expression=row["expression"],
        state="ENABLED",
        last_fired_at=datetime.fromisoformat(fired) if fired else None,
        source=source,
    )
