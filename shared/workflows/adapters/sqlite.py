"""Workflows and executions in the embedded database: one row each, the record as JSON beside
the columns that lookups use. An execution's write is `UPDATE … WHERE revision = ?`, whose row
count decides a race (inside `BEGIN IMMEDIATE`, so across threads and processes)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal

from shared.domain_events.adapters.sqlite_outbox_store import SqliteOutboxStore
from shared.domain_events.models import DomainEvent
from shared.storage.pages import Page
from shared.storage.sqlite import Migration, from_json, newest_first_page, to_json
from shared.storage.times import sortable
from shared.workflows.models import OPEN_EXECUTIONS, Execution, Workflow
from shared.workflows.ports import NameTaken, StaleWrite

MIGRATIONS = (
    Migration(
        "workflows",
        1,
        (
            "CREATE TABLE workflows ("
            " team TEXT NOT NULL, id TEXT NOT NULL, name TEXT NOT NULL,"
            " created_at TEXT NOT NULL, updated_at TEXT NOT NULL, record TEXT NOT NULL,"
            " PRIMARY KEY (team, id))",
            "CREATE UNIQUE INDEX workflows_name ON workflows (team, name)",
            "CREATE INDEX workflows_newest ON workflows (team, created_at DESC, id DESC)",
            "CREATE TABLE workflow_executions ("
            " team TEXT NOT NULL, id TEXT NOT NULL, workflow_id TEXT NOT NULL,"
            " status TEXT NOT NULL, revision INTEGER NOT NULL, record TEXT NOT NULL,"
            " PRIMARY KEY (team, id))",
            # The open executions: what the local runner sweeps after a restart.
            "CREATE INDEX workflow_executions_open ON workflow_executions (team, id)"
            " WHERE status IN ('running', 'paused')",
        ),
    ),
)


def _json(model: Workflow | Execution) -> str:
    return to_json(model.model_dump(mode="json"))


class SqliteWorkflowStore(SqliteOutboxStore):
    """`WorkflowStore` on the embedded database."""

    migrations = MIGRATIONS

    def create(self, team: str, workflow: Workflow) -> None:
        with self._db.write() as tx:
            row = tx.execute(
                "SELECT record FROM workflows WHERE team = ? AND name = ?", (team, workflow.name)
            ).fetchone()
            if row is not None:
                raise NameTaken(Workflow.model_validate(from_json(row["record"])))
            tx.execute(
                "INSERT INTO workflows (team, id, name, created_at, updated_at, record)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (
                    team,
                    workflow.id,
                    workflow.name,
                    sortable(workflow.created_at),
                    sortable(workflow.updated_at),
                    _json(workflow),
                ),
            )

    def get(self, team: str, workflow_id: str) -> Workflow | None:
        return self._one(team, "id", workflow_id)

    def find_by_name(self, team: str, name: str) -> Workflow | None:
        return self._one(team, "name", name)

    def _one(self, team: str, column: Literal["id", "name"], value: str) -> Workflow | None:
        row = (
            self._db.connection()
            .execute(
                f"SELECT record FROM workflows WHERE team = ? AND {column} = ?",  # noqa: S608 - a fixed column
                (team, value),
            )
            .fetchone()
        )
        return Workflow.model_validate(from_json(row["record"])) if row else None

    def replace(self, team: str, workflow: Workflow, expected_updated_at: datetime) -> None:
        with self._db.write() as tx:
            changed = tx.execute(
                "UPDATE workflows SET updated_at = ?, record = ?"
                " WHERE team = ? AND id = ? AND updated_at = ?",
                (
                    sortable(workflow.updated_at),
                    _json(workflow),
                    team,
                    workflow.id,
                    sortable(expected_updated_at),
                ),
            ).rowcount
            if changed != 1:
                raise StaleWrite(workflow.id)

    def list_team(self, team: str, *, limit: int, cursor: str | None = None) -> Page[Workflow]:
        page = newest_first_page(
            self._db.connection(),
            "workflows",
            team,
            order_by="created_at",
            limit=limit,
            cursor=cursor,
        )
        return Page(
            [Workflow.model_validate(from_json(row["record"])) for row in page.items],
            page.next_cursor,
        )

    def create_execution(
        self, team: str, execution: Execution, *, events: Sequence[DomainEvent] = ()
    ) -> None:
        rows = self._outbox.rows(team, events)
        with self._db.write() as tx:
            tx.execute(
                "INSERT INTO workflow_executions (team, id, workflow_id, status, revision, record)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (
                    team,
                    execution.id,
                    execution.workflow_id,
                    execution.status,
                    execution.revision,
                    _json(execution),
                ),
            )
            self._outbox.append(tx, rows)

    def get_execution(self, team: str, execution_id: str) -> Execution | None:
        row = (
            self._db.connection()
            .execute(
                "SELECT record FROM workflow_executions WHERE team = ? AND id = ?",
                (team, execution_id),
            )
            .fetchone()
        )
        return Execution.model_validate(from_json(row["record"])) if row else None

    def save_execution(
        self, team: str, execution: Execution, *, events: Sequence[DomainEvent] = ()
    ) -> None:
        rows = self._outbox.rows(team, events)
        with self._db.write() as tx:
            changed = tx.execute(
                "UPDATE workflow_executions SET status = ?, revision = ?, record = ?"
                " WHERE team = ? AND id = ? AND revision = ?",
                (
                    execution.status,
                    execution.revision,
                    _json(execution),
                    team,
                    execution.id,
                    execution.revision - 1,
                ),
            ).rowcount
            if changed != 1:
                raise StaleWrite(execution.id)
            self._outbox.append(tx, rows)

    def schedule_teams(self) -> list[str]:
        """The teams with at least one schedule-triggered workflow, for the embedded default's
        worker (in AWS EventBridge Scheduler fires each schedule itself, so the port has no
        such cross-team read)."""
        rows = (
            self._db.connection()
            .execute(
                "SELECT DISTINCT team FROM workflows"
                " WHERE json_extract(record, '$.trigger_type') = 'schedule' ORDER BY team"
            )
            .fetchall()
        )
        return [row["team"] for row in rows]

    def open_executions(self, team: str | None = None) -> list[tuple[str, Execution]]:
        query = "SELECT team, record FROM workflow_executions WHERE status IN ('running', 'paused')"
        parameters: tuple[Any, ...] = ()
        if team is not None:
            query += " AND team = ?"
            parameters = (team,)
        rows = self._db.connection().execute(query, parameters).fetchall()
        found = [(row["team"], Execution.model_validate(from_json(row["record"]))) for row in rows]
        return [(owner, ex) for owner, ex in found if ex.status in OPEN_EXECUTIONS]
