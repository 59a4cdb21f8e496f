"""Cost reports and their sums; the reports live in a `CostLedger` port.

A report's cost is `estimated_cost_usd` when given, else computed from the token counts and the
per-million-token prices (0 when neither is given). Summaries and budgets read the period's
reports of the team from the ledger (one time-ordered range read). Budget limits are deployment
configuration (`CAIRN_COST_BUDGET_USD`, the team's limit per period); the seed has no tool that
sets one, so without it a budget line reports spend only.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from shared.auth.principal import Principal
from shared.domain_events.emitter import DomainEvents
from shared.domain_events.models import Kind
from shared.orchestrator.costs.models import BudgetLine, CostGroup, CostRecord
from shared.orchestrator.costs.ports import BudgetCrossing, CostLedger
from shared.tools.errors import InvalidArgument

PERIODS: dict[str, timedelta | None] = {
    "24h": timedelta(days=1),
    "day": timedelta(days=1),
    "7d": timedelta(days=7),
    "week": timedelta(days=7),
    "30d": timedelta(days=30),
    "month": timedelta(days=30),
    "all": None,
}
# The period whose spend a report is checked against the budget: cost.budget's default.
BUDGET_PERIOD = "30d"


GROUP_KEYS: dict[str, Callable[[CostRecord], str | None]] = {
    "agent": lambda r: r.agent_id,
    "model": lambda r: r.model,
    "provider": lambda r: r.provider,
    "workflow": lambda r: r.workflow_id,
}


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


@dataclass(eq=False)
class CostService:
    ledger: CostLedger
    budget_usd: float | None = None
    clock: Callable[[], float] = time.time
    events: DomainEvents = field(default_factory=DomainEvents)

    def _now(self) -> datetime:
        return datetime.fromtimestamp(self.clock(), tz=UTC)

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
        self.ledger.record(principal.team, record)
        self._check_budget(principal, record)
        return cost

    def _check_budget(self, principal: Principal, record: CostRecord) -> None:
        """`Budget Exceeded` exactly once per crossing of the team's budget.

        After recording its report, each report reads the period's spend (a consistent read:
        of reports racing each other, the last to read sees them all). Over the limit, it
        marks the team over that budget (team + period + limit) until the moment the spend
        would fall back to the limit as its oldest reports leave the window: one conditional
        write that carries the event when it starts a crossing, and only moves that moment
        later when the crossing is already marked. So racing reports send one event, a
        report while over sends none, and a spend that fell back and rises again is a new
        crossing (docs/events.md)."""
        limit = self.budget_usd
        if limit is None or record.cost_usd <= 0:
            return
        now = self._now()
        window = PERIODS[BUDGET_PERIOD]
        assert window is not None
        records = self.ledger.reports_since(principal.team, now - window)
        spent = sum(r.cost_usd for r in records)
        if spent <= limit:
            return
        over_until, remaining = now + window, spent
        for oldest in records:
            remaining -= oldest.cost_usd
            if remaining <= limit:
                over_until = oldest.reported_at + window
                break
        exceeded = self.events.event(
            principal.team,
            Kind.BUDGET_EXCEEDED,
            principal.actor,
            period=BUDGET_PERIOD,
            limit_usd=limit,
            spent_usd=round(spent, 6),
            agent_id=record.agent_id,
            workflow_id=record.workflow_id,
        )
        crossing = BudgetCrossing(f"{BUDGET_PERIOD}:{limit}", now, over_until)
        self.ledger.mark_over_budget(principal.team, crossing, events=[exceeded])

    def records(self, principal: Principal, period: str) -> list[CostRecord]:
        """The team's reports of the period ending now, oldest first."""
        span = PERIODS[period]
        return self.ledger.reports_since(
            principal.team, None if span is None else self._now() - span
        )

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
            limit = self.budget_usd
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
