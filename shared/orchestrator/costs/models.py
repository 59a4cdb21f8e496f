"""Costs (seed 000's cost.report / cost.summary / cost.budget)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from shared.tools.inputs import SeedToolInput

Period = Literal["24h", "7d", "30d", "day", "week", "month", "all"]
GroupBy = Literal["agent", "model", "provider", "workflow"]


_Input = SeedToolInput


class CostReportInput(_Input):
    agent_id: str = Field(
        min_length=1, max_length=128, description="The reporting agent: the token's own."
    )
    task_id: str | None = Field(default=None, min_length=1, max_length=64)
    workflow_id: str | None = Field(default=None, min_length=1, max_length=128)
    model: str = Field(min_length=1, max_length=128)
    provider: str = Field(min_length=1, max_length=64)
    tokens_input: int = Field(default=0, ge=0, le=10**15)
    tokens_output: int = Field(default=0, ge=0, le=10**15)
    tokens_cache_read: int = Field(default=0, ge=0, le=10**15)
    tokens_cache_write: int = Field(default=0, ge=0, le=10**15)
    estimated_cost_usd: float | None = Field(default=None, ge=0, le=1e9)
    input_price_per_mtok: float | None = Field(default=None, ge=0, le=1e6)
    output_price_per_mtok: float | None = Field(default=None, ge=0, le=1e6)


class CostSummaryInput(_Input):
    period: Period = Field(
        default="30d", description="24h, 7d, 30d (day, week, month are the same), or all."
    )
    group_by: GroupBy | None = Field(
        default=None, description="Also total by agent, model, provider or workflow."
    )


class CostBudgetInput(_Input):
    agent_id: str | None = Field(default=None, min_length=1)
    workflow_id: str | None = Field(default=None, min_length=1)
    period: Period = "30d"


class CostRecord(BaseModel):
    agent_id: str
    task_id: str | None = None
    workflow_id: str | None = None
    model: str
    provider: str
    tokens_input: int = 0
    tokens_output: int = 0
    tokens_cache_read: int = 0
    tokens_cache_write: int = 0
    cost_usd: float
    reported_by: str
    reported_at: datetime


class CostGroup(BaseModel):
    key: str
    total_usd: float
    reports: int
    tokens_input: int
    tokens_output: int


class CostSummaryOutput(BaseModel):
    period: Period
    total_usd: float
    by_agent: list[CostGroup]
    by_model: list[CostGroup]
    groups: list[CostGroup] | None = None


class BudgetLine(BaseModel):
    """Spend in the period; `limit_usd` / `remaining_usd` when a budget is configured."""

    spent_usd: float
    limit_usd: float | None
    remaining_usd: float | None


class CostBudgetOutput(BaseModel):
    period: Period
    global_: BudgetLine = Field(alias="global", serialization_alias="global")
    agent: BudgetLine | None
    workflow: BudgetLine | None

    model_config = ConfigDict(populate_by_name=True)


class CostReportOutput(BaseModel):
    success: Literal[True] = True
    cost_usd: float
