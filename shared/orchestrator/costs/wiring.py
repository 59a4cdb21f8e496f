"""Builds the cost ledger and service on the configured storage (the one place adapters are
chosen)."""

from __future__ import annotations

from shared import runtime
from shared.config import names
from shared.domain_events.wiring import build_domain_events
from shared.orchestrator.costs.ports import CostLedger
from shared.orchestrator.costs.service import CostService
from shared.storage.backends import Adapters

COST_LEDGER = Adapters[CostLedger].named(
    sqlite="shared.orchestrator.costs.adapters.sqlite:SqliteCostLedger",
    dynamodb="shared.orchestrator.costs.adapters.dynamodb:DynamoCostLedger",
    table=names.TABLE_COORDINATION,
)


def build_cost_ledger() -> CostLedger:
    return runtime.backend().build(COST_LEDGER)


def build_cost_service() -> CostService:
    return CostService(
        build_cost_ledger(),
        budget_usd=runtime.settings().cost_budget_usd,
        events=build_domain_events(),
    )
