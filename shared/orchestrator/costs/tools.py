"""Seed 000's cost.report, cost.summary and cost.budget on the orchestrator group."""

from __future__ import annotations

from shared.orchestrator.costs.models import (
    CostBudgetInput,
    CostBudgetOutput,
    CostReportInput,
    CostReportOutput,
    CostSummaryInput,
    CostSummaryOutput,
)
from shared.orchestrator.group import GROUP
from shared.orchestrator.service import Orchestrator
from shared.tools.registry import APPEND, READ_ONLY, ToolContext


@GROUP.tool(
    name="cost.report",
    title="Report cost",
    description="Report cost usage of the calling agent: tokens and either the cost in USD "
    "or the per-million-token prices to compute it from.",
    scopes=("cost.write",),
    # Each call adds a report (two identical calls count twice).
    annotations=APPEND,
)
def cost_report(ctx: ToolContext[Orchestrator], args: CostReportInput) -> CostReportOutput:
    cost = ctx.service.costs.report(
        ctx.principal, **args.model_dump(exclude={"token"}, exclude_none=True)
    )
    return CostReportOutput(cost_usd=round(cost, 6))


@GROUP.tool(
    name="cost.summary",
    title="Summarize costs",
    description="Summarize costs of the team over a period: the total, by agent and by "
    "model, and optionally by another dimension.",
    scopes=("cost.read",),
    annotations=READ_ONLY,
)
def cost_summary(ctx: ToolContext[Orchestrator], args: CostSummaryInput) -> CostSummaryOutput:
    total, by_agent, by_model, groups = ctx.service.costs.summary(
        ctx.principal, args.period, args.group_by
    )
    return CostSummaryOutput(
        period=args.period,
        total_usd=total,
        by_agent=by_agent,
        by_model=by_model,
        groups=groups,
    )


@GROUP.tool(
    name="cost.budget",
    title="Budget status",
    description="Get budget status: spend over the period for the team, and for an agent "
    "and a workflow when named, against the configured limit.",
    scopes=("cost.read",),
    annotations=READ_ONLY,
)
def cost_budget(ctx: ToolContext[Orchestrator], args: CostBudgetInput) -> CostBudgetOutput:
    overall, agent, workflow = ctx.service.costs.budget(
        ctx.principal, args.period, args.agent_id, args.workflow_id
    )
    return CostBudgetOutput(period=args.period, global_=overall, agent=agent, workflow=workflow)
