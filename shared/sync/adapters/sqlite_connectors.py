"""The team's registered connectors in the embedded database: one row per connector (its
record as JSON), and one row per item it last synced (id and version)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping

from shared.connectors.models import ConnectorRecord, ConnectorStatus
from shared.storage.sqlite import Database, Migration
from shared.sync.ports import ConnectorExists

MIGRATIONS = (
    Migration(
        "connectors",
        1,
        (
            "CREATE TABLE connectors ("
            " team TEXT NOT NULL, name TEXT NOT NULL, body TEXT NOT NULL,"
            " PRIMARY KEY (team, name))",
            # Read whole per connector at each sync; the key's prefix is the lookup.
            "CREATE TABLE connector_items ("
            " team TEXT NOT NULL, name TEXT NOT NULL, item TEXT NOT NULL,"
            " version TEXT NOT NULL, PRIMARY KEY (team, name, item))",
        ),
    ),
)


class SqliteConnectorStore:
    """`ConnectorStore` on the embedded database."""

    def __init__(self, db: Database) -> None:
        self._db = db
        db.migrate(MIGRATIONS)

    def add(self, team: str, record: ConnectorRecord, *, replace: bool = False) -> None:
        with self._db.write() as tx:
            if replace:
                row = tx.execute(
                    "SELECT body FROM connectors WHERE team = ? AND name = ?", (team, record.name)
                ).fetchone()
                if row is not None:  # the status (and cursor) stay with the name
                    old = ConnectorRecord.model_validate_json(row["body"])
                    record = record.model_copy(update={"status": old.status})
                tx.execute(
                    "INSERT INTO connectors (team, name, body) VALUES (?, ?, ?)"
                    " ON CONFLICT (team, name) DO UPDATE SET body = excluded.body",
                    (team, record.name, record.model_dump_json()),
                )
                return
            try:
                tx.execute(
                    "INSERT INTO connectors (team, name, body) VALUES (?, ?, ?)",
                    (team, record.name, record.model_dump_json()),
                )
            except sqlite3.IntegrityError as exc:
                raise ConnectorExists(record.name) from exc

    def get(self, team: str, name: str) -> ConnectorRecord | None:
        row = (
            self._db.connection()
            .execute("SELECT body FROM connectors WHERE team = ? AND name = ?", (team, name))
            .fetchone()
        )
        return None if row is None else ConnectorRecord.model_validate_json(row["body"])

    def list(self, team: str) -> list[ConnectorRecord]:
        rows = (
            self._db.connection()
            .execute("SELECT body FROM connectors WHERE team = ? ORDER BY name", (team,))
            .fetchall()
        )
        return [ConnectorRecord.model_validate_json(row["body"]) for row in rows]

    def remove(self, team: str, name: str) -> bool:
        with self._db.write() as tx:
            gone = tx.execute(
                "DELETE FROM connectors WHERE team = ? AND name = ?", (team, name)
            ).rowcount
            tx.execute("DELETE FROM connector_items WHERE team = ? AND name = ?", (team, name))
        return gone == 1

    def record_status(self, team: str, name: str, status: ConnectorStatus) -> bool:
        with self._db.write() as tx:
            row = tx.execute(
                "SELECT body FROM connectors WHERE team = ? AND name = ?", (team, name)
            ).fetchone()
            if row is None:
                return False
            record = ConnectorRecord.model_validate_json(row["body"])
            tx.execute(
                "UPDATE connectors SET body = ? WHERE team = ? AND name = ?",
                (record.model_copy(update={"status": status}).model_dump_json(), team, name),
            )
        return True

    def item_versions(self, team: str, name: str) -> dict[str, str]:
        rows = (
            self._db.connection()
            .execute(
                "SELECT item, version FROM connector_items WHERE team = ? AND name = ?",
                (team, name),
            )
            .fetchall()
        )
        return {row["item"]: row["version"] for row in rows}

    def update_item_versions(
        self, team: str, name: str, changed: Mapping[str, str], removed: Iterable[str]
    ) -> None:
        with self._db.write() as tx:
            tx.executemany(
                "INSERT INTO connector_items (team, name, item, version) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (team, name, item) DO UPDATE SET version = excluded.version",
                [(team, name, item, version) for item, version in changed.items()],
            )
            tx.executemany(
                "DELETE FROM connector_items WHERE team = ? AND name = ? AND item = ?",
                [(team, name, item) for item in removed],
            )
