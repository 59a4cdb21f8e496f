"""The cost ledger in the embedded database: one row per report, the report as JSON beside the
report time that period sums select on."""

from __future__ import annotations

import secrets
import sqlite3
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from shared.domain_events.adapters.sqlite_outbox_store import SqliteOutboxStore
from shared.domain_events.models import DomainEvent
from shared.orchestrator.costs.models import CostRecord
from shared.orchestrator.costs.ports import BudgetCrossing
from shared.storage.snapshot import SnapshotItem, migrate_each
from shared.storage.sqlite import Migration, from_json, to_json
from shared.storage.times import sortable

MIGRATIONS = (
    Migration(
        "costs",
        1,
        (
            # `id` is the DynamoDB sort key without `COST#` (`<time>#<random>`): reports order
            # alike in both stores, and a migrated report keeps its identity.
            "CREATE TABLE costs ("
            " team TEXT NOT NULL, id TEXT NOT NULL, reported_at TEXT NOT NULL,"
            " record TEXT NOT NULL, PRIMARY KEY (team, id))",
            # A period's reports of the team, oldest first: what summaries and budgets read.
            "CREATE INDEX costs_by_time ON costs (team, reported_at, id)",
        ),
    ),
    Migration(
        "costs",
        2,
        (
            # One row per team and budget (period and limit): the crossing it is in, if any.
            "CREATE TABLE budget_crossings ("
            " team TEXT NOT NULL, budget TEXT NOT NULL, crossed_at TEXT NOT NULL,"
            " over_until TEXT NOT NULL, PRIMARY KEY (team, budget))",
        ),
    ),
)

_INSERT = "INSERT OR IGNORE INTO costs (team, id, reported_at, record) VALUES (?, ?, ?, ?)"


def _row(team: str, report_id: str, report: CostRecord) -> tuple[Any, ...]:
    return (
        team,
        report_id,
        sortable(report.reported_at),
        to_json(report.model_dump(mode="json", exclude_none=True)),
    )


class SqliteCostLedger(SqliteOutboxStore):
    """`CostLedger` on the embedded database."""

    migrations = MIGRATIONS

    def record(self, team: str, report: CostRecord) -> None:
        report_id = f"{sortable(report.reported_at)}#{secrets.token_hex(6)}"
        with self._db.write() as tx:
            inserted = tx.execute(_INSERT, _row(team, report_id, report)).rowcount
            if inserted != 1:  # 48 random bits within one microsecond: never, short of a bug
                raise ValueError(f"cost report {report_id} already exists")

    def mark_over_budget(
        self, team: str, crossing: BudgetCrossing, *, events: Sequence[DomainEvent] = ()
    ) -> bool:
        # BEGIN IMMEDIATE: the read and the write below are one step for every writer.
        rows = self._outbox.rows(team, events)
        with self._db.write() as tx:
            row = tx.execute(
                "SELECT over_until FROM budget_crossings WHERE team = ? AND budget = ?",
                (team, crossing.budget),
            ).fetchone()
            if row is not None and row["over_until"] > sortable(crossing.at):
                tx.execute(
                    "UPDATE budget_crossings SET over_until = ?"
                    " WHERE team = ? AND budget = ? AND over_until < ?",
                    (
                        sortable(crossing.over_until),
                        team,
                        crossing.budget,
                        sortable(crossing.over_until),
                    ),
                )
                return False
            tx.execute(
                "INSERT INTO budget_crossings (team, budget, crossed_at, over_until)"
                " VALUES (?, ?, ?, ?) ON CONFLICT (team, budget) DO UPDATE SET"
                " crossed_at = excluded.crossed_at, over_until = excluded.over_until",
                (team, crossing.budget, sortable(crossing.at), sortable(crossing.over_until)),
            )
            self._outbox.append(tx, rows)
        return True

    def reports_since(self, team: str, since: datetime | None) -> list[CostRecord]:
        rows = (
            self._db.connection()
            .execute(
                "SELECT record FROM costs WHERE team = ? AND reported_at >= ?"
                " ORDER BY reported_at, id",
                (team, "" if since is None else sortable(since)),
            )
            .fetchall()
        )
        return [CostRecord.model_validate(from_json(row["record"])) for row in rows]

    def migrate_items(self, items: Iterable[dict[str, Any]]) -> int:
        """Import the cost items of the old DynamoDB-shaped snapshot (other items are ignored)."""

        def write(tx: sqlite3.Connection, item: SnapshotItem) -> None:
            tx.execute(_INSERT, _row(item.team, item.key_after("COST#"), item.record(CostRecord)))

        return migrate_each(self._db, items, {"COST#": write})
