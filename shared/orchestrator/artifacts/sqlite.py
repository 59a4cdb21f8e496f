"""Artifact records in the embedded database: one row per artifact, the record as JSON beside
the columns `artifact.list` filters on (its bytes stay files: `FolderArtifactBlobs`).

A record is written once and never changed, so the only condition is the primary key: a
second record under one id fails instead of overwriting.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from typing import Any

from shared.orchestrator.artifacts.adapters import ARTIFACT_PREFIX, artifact_from_item
from shared.orchestrator.artifacts.models import Artifact
from shared.storage.snapshot import SnapshotItem, migrate_each
from shared.storage.sqlite import Database, Migration, from_json, to_json

MIGRATIONS = (
    Migration(
        "artifacts",
        1,
        (
            # Primary key (team, id): `get`, and ids never taken twice.
            "CREATE TABLE artifacts ("
            " team TEXT NOT NULL, id TEXT NOT NULL, task_id TEXT NOT NULL, workflow_id TEXT,"
            " record TEXT NOT NULL, PRIMARY KEY (team, id))",
            # artifact.list by task (and workflow), and by workflow alone.
            "CREATE INDEX artifacts_by_task ON artifacts (team, task_id, id)",
            "CREATE INDEX artifacts_by_workflow ON artifacts (team, workflow_id, id)"
            " WHERE workflow_id IS NOT NULL",
        ),
    ),
)


def _row(team: str, artifact: Artifact) -> tuple[Any, ...]:
    return (
        team,
        artifact.artifact_id,
        artifact.task_id,
        artifact.workflow_id,
        to_json(artifact.model_dump(mode="json", exclude_none=True)),
    )


def _artifact(row: Any) -> Artifact:
    return Artifact.model_validate(from_json(row["record"]))


class SqliteArtifactRecords:
    """`ArtifactRecords` on the embedded database."""

    def __init__(self, db: Database) -> None:
        self._db = db
        db.migrate(MIGRATIONS)

    def create(self, team: str, artifact: Artifact) -> None:
        with self._db.write() as tx:
            # Ids are random: a collision would be a bug, so a plain INSERT (it raises).
            tx.execute(
                "INSERT INTO artifacts (team, id, task_id, workflow_id, record)"
                " VALUES (?, ?, ?, ?, ?)",
                _row(team, artifact),
            )

    def get(self, team: str, artifact_id: str) -> Artifact | None:
        row = (
            self._db.connection()
            .execute("SELECT record FROM artifacts WHERE team = ? AND id = ?", (team, artifact_id))
            .fetchone()
        )
        return _artifact(row) if row else None

    def iter_team(
        self, team: str, *, task_id: str | None, workflow_id: str | None
    ) -> Iterator[Artifact]:
        clauses = ["team = ?"]
        parameters: list[Any] = [team]
        for column, value in (("task_id", task_id), ("workflow_id", workflow_id)):
            if value is not None:
                clauses.append(f"{column} = ?")
                parameters.append(value)
        rows = (
            self._db.connection()
            .execute(
                f"SELECT record FROM artifacts WHERE {' AND '.join(clauses)} ORDER BY id",  # noqa: S608 - fixed column names
                parameters,
            )
            .fetchall()
        )
        for row in rows:
            yield _artifact(row)

    def migrate_items(self, items: Iterable[dict[str, Any]]) -> int:
        """Import the artifact records of an old DynamoDB-shaped snapshot of the coordination
        table (other records are ignored); returns how many."""

        def write(tx: sqlite3.Connection, item: SnapshotItem) -> None:
            tx.execute(
                "INSERT OR IGNORE INTO artifacts (team, id, task_id, workflow_id, record)"
                " VALUES (?, ?, ?, ?, ?)",
                _row(item.team, artifact_from_item(item.item)),
            )

        return migrate_each(self._db, items, {ARTIFACT_PREFIX: write})
