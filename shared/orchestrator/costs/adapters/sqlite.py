"""The cost ledger in the embedded database: one row per report, the report as JSON beside the
report time that period sums select on."""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from shared.dynamo_values import from_dynamo
from shared.orchestrator.costs.models import CostRecord
from shared.storage.sqlite import Database, Migration, from_json, to_json
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
)

_INSERT = "INSERT OR IGNORE INTO costs (team, id, reported_at, record) VALUES (?, ?, ?, ?)"


def _row(team: str, report_id: str, report: CostRecord) -> tuple[Any, ...]:
    return (
        team,
        report_id,
        sortable(report.reported_at),
        to_json(report.model_dump(mode="json", exclude_none=True)),
    )


class SqliteCostLedger:
    """`CostLedger` on the embedded database."""

    def __init__(self, db: Database) -> None:
        self._db = db
        db.migrate(MIGRATIONS)

    def record(self, team: str, report: CostRecord) -> None:
        report_id = f"{sortable(report.reported_at)}#{secrets.token_hex(6)}"
        with self._db.write() as tx:
            inserted = tx.execute(_INSERT, _row(team, report_id, report)).rowcount
            if inserted != 1:  # 48 random bits within one microsecond: never, short of a bug
                raise ValueError(f"cost report {report_id} already exists")

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
        imported = 0
        with self._db.write() as tx:
            for item in items:
                if not str(item.get("sk", "")).startswith("COST#"):
                    continue
                report = CostRecord.model_validate(from_dynamo(item))
                team = str(item["pk"]).removeprefix("TEAM#")
                tx.execute(_INSERT, _row(team, str(item["sk"]).removeprefix("COST#"), report))
                imported += 1
        return imported
