"""`Budget Exceeded` exactly once per crossing, on DynamoDB (moto) and SQLite alike.

The ledger's `mark_over_budget` is one conditional write keyed by team + budget (period and
limit) that carries the event only when it starts a crossing; the cost service calls it after
each report that finds the spend over the limit. Racing reports across the limit send one
event; reports while over send none; a spend that fell back and rises again is a new crossing.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from shared.auth.principal import Principal
from shared.domain_events.emitter import DomainEvents
from shared.domain_events.models import Kind
from shared.orchestrator.costs.ports import BudgetCrossing, CostLedger
from shared.orchestrator.costs.service import CostService
from shared.orchestrator.costs.wiring import build_cost_ledger
from shared.orchestrator.events.ports import EventLog
from shared.orchestrator.events.wiring import build_event_log
from tests.unit.storage.conftest import Backend

NOW = datetime.now(UTC).replace(microsecond=0)
EPOCH = datetime(2000, 1, 1, tzinfo=UTC)
BUDGET = "30d:1.0"


def exceeded(log: EventLog, team: str = "alpha") -> list[dict[str, Any]]:
    return [e.payload for e in log.read_after(team, EPOCH, Kind.BUDGET_EXCEEDED.value, 500)]


@pytest.fixture
def ledger(backend: Backend) -> CostLedger:
    return build_cost_ledger()


@pytest.fixture
def log(backend: Backend) -> EventLog:
    return build_event_log()


def crossing(at_day: int, until_day: int, budget: str = BUDGET) -> BudgetCrossing:
    """Over `budget` on day `at_day`, until day `until_day` without new reports."""
    return BudgetCrossing(budget, NOW + timedelta(days=at_day), NOW + timedelta(days=until_day))


def test_a_crossing_is_marked_once_until_it_ends(ledger: CostLedger, log: EventLog) -> None:
    make = DomainEvents()

    def event() -> Any:
        return make.event("alpha", Kind.BUDGET_EXCEEDED, "a", period="30d")

    first = event()
    assert ledger.mark_over_budget("alpha", crossing(0, 3), events=[first])
    # Still over: the same crossing, whatever the report says about its end; no event.
    assert not ledger.mark_over_budget("alpha", crossing(1, 2), events=[event()])
    assert not ledger.mark_over_budget("alpha", crossing(2, 5), events=[event()])
    # The end moved to day 5 (never back to day 2): day 4 is the same crossing.
    assert not ledger.mark_over_budget("alpha", crossing(4, 4), events=[event()])
    assert [p["id"] for p in exceeded(log)] == [first.id]
    # Another team, another budget: their own crossings.
    assert ledger.mark_over_budget(
        "beta", crossing(0, 3), events=[make.event("beta", Kind.BUDGET_EXCEEDED, "b")]
    )
    assert ledger.mark_over_budget("alpha", crossing(0, 3, budget="30d:2.0"))
    # After the crossing ended (day 5), being over again is a new crossing.
    again = event()
    assert ledger.mark_over_budget("alpha", crossing(6, 9), events=[again])
    assert [p["id"] for p in exceeded(log)] == [first.id, again.id]


def principal(agent: str) -> Principal:
    return Principal(
        team="alpha",
        token_id=f"tok-{agent}",
        token_name=agent,
        scopes=frozenset({"cost.write"}),
        agent_id=agent,
    )


def report(service: CostService, agent: str, usd: float) -> None:
    service.report(
        principal(agent), agent_id=agent, model="m", provider="p", estimated_cost_usd=usd
    )


@pytest.mark.usefixtures("atomic_moto")
def test_racing_reports_across_the_limit_send_one_event(ledger: CostLedger, log: EventLog) -> None:
    service = CostService(ledger, budget_usd=1.0)
    report(service, "seed", 0.9)  # under the limit: any report below takes it over
    workers, barrier = 8, threading.Barrier(8)
    failures: list[BaseException] = []

    def race(number: int) -> None:
        barrier.wait()
        try:
            for _ in range(3):
                report(service, f"agent-{number}", 0.05)
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=race, args=(n,)) for n in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    (event,) = exceeded(log)
    assert event["period"] == "30d"
    assert event["limit_usd"] == 1.0
    assert event["spent_usd"] > 1.0


def test_reports_over_the_limit_then_a_new_crossing_after_the_spend_fell_back(
    ledger: CostLedger, log: EventLog
) -> None:
    clock = [NOW.timestamp()]
    service = CostService(ledger, budget_usd=1.0, clock=lambda: clock[0])
    report(service, "a", 0.6)
    report(service, "a", 0.6)  # over: the crossing
    report(service, "a", 0.6)  # still over
    assert len(exceeded(log)) == 1
    # 31 days on, those reports left the 30-day window: the spend is back to 0.
    clock[0] += timedelta(days=31).total_seconds()
    report(service, "a", 0.6)
    assert len(exceeded(log)) == 1
    report(service, "a", 0.6)  # over again: a new crossing
    assert len(exceeded(log)) == 2
