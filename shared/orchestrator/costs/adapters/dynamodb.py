"""The cost ledger in the coordination table: `TEAM#<team>` / `COST#<time>#<random>`.

The sort key begins with the report time (UTC, microseconds), so a period's reports are one
Query on the key range from the period's start. A team's crossing of a budget is one item,
`BUDGET#<period>:<limit>`, written conditionally (with its event, in one transaction).
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from boto3.dynamodb.conditions import Key

from shared.domain_events.adapters.outbox import DynamoOutbox
from shared.domain_events.models import DomainEvent
from shared.orchestrator.costs.models import CostRecord
from shared.orchestrator.costs.ports import BudgetCrossing
from shared.storage.dynamo import ConditionLost, query_all, team_pk, update_if
from shared.storage.times import sortable
from shared.storage.values import from_dynamo, to_dynamo

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.service_resource import Table


class DynamoCostLedger:
    """`CostLedger` on the coordination table (see `shared.config.tables.COORDINATION`)."""

    def __init__(self, table: Table) -> None:
        self._table = table
        # The event log lives in this same table.
        self._outbox = DynamoOutbox(table)

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
            # The budget check must see every report recorded before it (a crossing is
            # decided by the last of racing reports to read; docs/events.md).
            ConsistentRead=True,
        )
        return [CostRecord.model_validate(from_dynamo(dict(item))) for item in items]

    def mark_over_budget(
        self, team: str, crossing: BudgetCrossing, *, events: Sequence[DomainEvent] = ()
    ) -> bool:
        key = {"pk": team_pk(team), "sk": f"BUDGET#{crossing.budget}"}
        names = {"#until": "over_until"}
        try:
            self._outbox.write(
                team,
                {
                    "Update": {
                        "TableName": self._table.name,
                        "Key": key,
                        "UpdateExpression": "SET crossed_at = :at, #until = :until",
                        # Not over this budget at `at`: never crossed, or that crossing ended.
                        "ConditionExpression": "attribute_not_exists(pk) OR #until <= :at",
                        "ExpressionAttributeNames": names,
                        "ExpressionAttributeValues": {
                            ":at": sortable(crossing.at),
                            ":until": sortable(crossing.over_until),
                        },
                    }
                },
                events,
            )
        except ConditionLost:
            # The crossing is already recorded: only carry its end later.
            # (ConditionLost here: a racing report carried it as far or further.)
            with contextlib.suppress(ConditionLost):
                update_if(
                    self._table,
                    key,
                    "SET #until = :until",
                    "#until < :until",
                    names=names,
                    values={":until": sortable(crossing.over_until)},
                )
            return False
        return True
