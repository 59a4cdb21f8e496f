"""The cost ledger in the coordination table: `TEAM#<team>` / `COST#<time>#<random>`.

The sort key begins with the report time (UTC, microseconds), so a period's reports are one
Query on the key range from the period's start.
"""

from __future__ import annotations

import secrets
from datetime import datetime
from typing import TYPE_CHECKING

from boto3.dynamodb.conditions import Key

from shared.dynamo_values import from_dynamo, to_dynamo
from shared.orchestrator.costs.models import CostRecord
from shared.storage.dynamo import query_all, team_pk
from shared.storage.times import sortable

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.service_resource import Table


class DynamoCostLedger:
    """`CostLedger` on the coordination table (see `shared.config.tables.COORDINATION`)."""

    def __init__(self, table: Table) -> None:
        self._table = table

    def record(self, team: str, report: CostRecord) -> None:
        self._table.put_item(
            Item={
                "pk": team_pk(team),
                "sk": f"COST#{sortable(report.reported_at)}#{secrets.token_hex(6)}",
                **to_dynamo(
                    report.model_dump(mode="json", exclude_none=True), "estimated_cost_usd"
                ),
            }
        )

    def reports_since(self, team: str, since: datetime | None) -> list[CostRecord]:
        start = "COST#" if since is None else f"COST#{sortable(since)}"
        items = query_all(
            self._table,
            KeyConditionExpression=Key("pk").eq(team_pk(team)) & Key("sk").between(start, "COST#~"),
        )
        return [CostRecord.model_validate(from_dynamo(dict(item))) for item in items]
