"""Cost reports in the coordination table (`TEAM#<team>` / `COST#<time>#<id>`) and their sums.

A report's cost is `estimated_cost_usd` when given, else computed from the token counts and the
per-million-token prices (0 when neither is given). Summaries and budgets read the period's
reports of the team with one Query on the time-ordered sort key. Budget limits are deployment
configuration (`CAIRN_COST_BUDGET_USD`, the team's limit per period); the seed has no tool that
sets one, so without it a budget line reports spend only.
"""

from __future__ import annotations

import secrets
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from boto3.dynamodb.conditions import Key

from shared import runtime
from shared.auth.principal import Principal
from shared.config import names
from shared.dynamo_values import from_dynamo, query_all, to_dynamo
from shared.orchestrator.costs.models import BudgetLine, CostGroup, CostRecord
from shared.tools.errors import InvalidArgument

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.service_resource import Table

PERIODS: dict[str, timedelta | None] = {
    "24h": timedelta(days=1),
    "day": timedelta(days=1),
    "7d": timedelta(days=7),
    "week": timedelta(days=7),
    "30d": timedelta(days=30),
    "month": timedelta(days=30),
    "all": None,
}


GROUP_KEYS: dict[str, Callable[[CostRecord], str | None]] = {
    "agent": lambda r: r.agent_id,
    "model": lambda r: r.model,
    "provider": lambda r: r.provider,
    "workflow": lambda r: r.workflow_id,
}


def _stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def cost_of(
    tokens_input: int,
    tokens_output: int,
    estimated_cost_usd: float | None,
    input_price_per_mtok: float | None,
    output_price_per_mtok: float | None,
) -> float:
    """The reported cost, else tokens × price per million tokens."""
    if estimated_cost_usd is not None:
        return estimated_cost_usd
    return (
        tokens_input * (input_price_per_mtok or 0.0)
        + tokens_output * (output_price_per_mtok or 0.0)
    ) / 1_000_000


def _groups(
    records: Iterable[CostRecord], key: Callable[[CostRecord], str | None]
) -> list[CostGroup]:
    totals: dict[str, list[Any]] = defaultdict(lambda: [0.0, 0, 0, 0])
    for record in records:
        bucket = totals[key(record) or "(none)"]
        bucket[0] += record.cost_usd
        bucket[1] += 1
        bucket[2] += record.tokens_input
        bucket[3] += record.tokens_output
    groups = [
        CostGroup(
            key=k, total_usd=round(v[0], 6), reports=v[1], tokens_input=v[2], tokens_output=v[3]
        )
        for k, v in totals.items()
    ]
    return sorted(groups, key=lambda g: (-g.total_usd, g.key))


class CostService:
    def __init__(
        self, table: Table, budget_usd: float | None = None, clock: Callable[[], float] = time.time
    ) -> None:
        self._table = table
        self._budget_usd = budget_usd
        self._clock = clock

    def _now(self) -> datetime:
        return datetime.fromtimestamp(self._clock(), tz=UTC)

    def report(self, principal: Principal, **fields: Any) -> float:
        """Record one usage report by the calling agent; returns its cost in USD."""
        agent_id = fields.pop("agent_id")
        if agent_id != principal.actor and "admin" not in principal.scopes:
            raise InvalidArgument(
                f"`agent_id` must be the calling agent ({principal.actor!r}); cairn takes the "
                f"agent from the token (got {agent_id!r})",
                field="agent_id",
            )
        cost = cost_of(
            fields.get("tokens_input", 0),
            fields.get("tokens_output", 0),
            fields.pop("estimated_cost_usd", None),
            fields.pop("input_price_per_mtok", None),
            fields.pop("output_price_per_mtok", None),
        )
        now = self._now()
        record = CostRecord(
            agent_id=agent_id, cost_usd=cost, reported_by=principal.actor, reported_at=now, **fields
        )
        self._table.put_item(
            Item={
                "pk": f"TEAM#{principal.team}",
                "sk": f"COST#{_stamp(now)}#{secrets.token_hex(6)}",
                **to_dynamo(
                    record.model_dump(mode="json", exclude_none=True), "estimated_cost_usd"
                ),
            }
        )
        return cost

    def records(self, principal: Principal, period: str) -> list[CostRecord]:
        span = PERIODS[period]
        start = "COST#" if span is None else f"COST#{_stamp(self._now() - span)}"
        items = query_all(
            self._table,
            KeyConditionExpression=Key("pk").eq(f"TEAM#{principal.team}")
            & Key("sk").between(start, "COST#~"),
        )
        return [CostRecord.model_validate(from_dynamo(dict(i))) for i in items]

    def summary(
        self, principal: Principal, period: str, group_by: str | None
    ) -> tuple[float, list[CostGroup], list[CostGroup], list[CostGroup] | None]:
        records = self.records(principal, period)
        extra = _groups(records, GROUP_KEYS[group_by]) if group_by is not None else None
        return (
            round(sum(r.cost_usd for r in records), 6),
            _groups(records, GROUP_KEYS["agent"]),
            _groups(records, GROUP_KEYS["model"]),
            extra,
        )

    def budget(
        self, principal: Principal, period: str, agent_id: str | None, workflow_id: str | None
    ) -> tuple[BudgetLine, BudgetLine | None, BudgetLine | None]:
        records = self.records(principal, period)

        def line(spent: float) -> BudgetLine:
            limit = self._budget_usd
            return BudgetLine(
                spent_usd=round(spent, 6),
                limit_usd=limit,
                remaining_usd=round(limit - spent, 6) if limit is not None else None,
            )

        overall = line(sum(r.cost_usd for r in records))
        agent = (
            line(sum(r.cost_usd for r in records if r.agent_id == agent_id))
            if agent_id is not None
            else None
        )
        workflow = (
            line(sum(r.cost_usd for r in records if r.workflow_id == workflow_id))
            if workflow_id is not None
            else None
        )
        return overall, agent, workflow


def build_cost_service() -> CostService:
    return CostService(
        runtime.table(names.TABLE_COORDINATION), budget_usd=runtime.settings().cost_budget_usd
    )
