"""The CostLedger contract, on DynamoDB (moto) and SQLite alike."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from shared.orchestrator.costs.models import CostRecord
from shared.orchestrator.costs.ports import CostLedger
from shared.orchestrator.costs.wiring import build_cost_ledger
from tests.unit.storage.conftest import Backend

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def report(number: int, **fields: Any) -> CostRecord:
    values: dict[str, Any] = {
        "agent_id": f"agent-{number % 2}",
        "model": "opus",
        "provider": "anthropic",
        "tokens_input": 1000 * number,
        "cost_usd": number / 10,
        "reported_by": f"agent-{number % 2}",
        "reported_at": T0 + timedelta(minutes=number),
    }
    values.update(fields)
    return CostRecord.model_validate(values)


def costs(reports: list[CostRecord]) -> list[float]:
    return [r.cost_usd for r in reports]


@pytest.fixture
def ledger(backend: Backend) -> CostLedger:
    return build_cost_ledger()


def test_a_recorded_report_reads_back_whole(ledger: CostLedger) -> None:
    recorded = report(
        1,
        task_id="tsk_1",
        workflow_id="wf",
        tokens_output=7,
        tokens_cache_read=3,
        tokens_cache_write=2,
        cost_usd=0.123456,
    )
    ledger.record("alpha", recorded)
    assert ledger.reports_since("alpha", None) == [recorded]


def test_reports_read_oldest_first_from_an_inclusive_start(ledger: CostLedger) -> None:
    for number in (3, 1, 4, 2):
        ledger.record("alpha", report(number))
    assert costs(ledger.reports_since("alpha", None)) == [0.1, 0.2, 0.3, 0.4]
    assert costs(ledger.reports_since("alpha", T0 + timedelta(minutes=2))) == [0.2, 0.3, 0.4]
    start = T0 + timedelta(minutes=2, microseconds=1)
    assert costs(ledger.reports_since("alpha", start)) == [0.3, 0.4]
    assert ledger.reports_since("alpha", T0 + timedelta(days=1)) == []


def test_reports_of_the_same_moment_are_all_kept(ledger: CostLedger) -> None:
    for number in range(1, 4):
        ledger.record("alpha", report(number, reported_at=T0))
    assert sorted(costs(ledger.reports_since("alpha", T0))) == [0.1, 0.2, 0.3]


def test_reads_are_confined_to_the_team(ledger: CostLedger) -> None:
    ledger.record("alpha", report(1))
    ledger.record("beta", report(2))
    assert costs(ledger.reports_since("alpha", None)) == [0.1]
    assert costs(ledger.reports_since("beta", None)) == [0.2]
    assert ledger.reports_since("gamma", None) == []


def test_concurrent_records_all_land(backend: Backend, ledger: CostLedger) -> None:
    if not backend.is_sqlite:
        pytest.skip("moto's writes are not atomic across threads (DynamoDB's are)")
    barrier = threading.Barrier(8)

    def record(worker: int) -> None:
        barrier.wait()
        for _ in range(10):
            ledger.record("alpha", report(worker, reported_at=T0))

    threads = [threading.Thread(target=record, args=(w,)) for w in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(ledger.reports_since("alpha", None)) == 80


def test_an_old_snapshot_migrates_into_sqlite(backend: Backend, tmp_path: Path) -> None:
    """Items the DynamoDB adapter wrote read back the same from SQLite after `migrate_items`."""
    if backend.is_sqlite:
        pytest.skip("the source of a migration is the DynamoDB layout")
    from shared.config import names
    from shared.orchestrator.costs.adapters.sqlite import SqliteCostLedger
    from shared.storage.sqlite import Database

    dynamo = build_cost_ledger()
    for number in range(1, 4):
        dynamo.record("alpha", report(number, workflow_id="wf" if number == 2 else None))
    dynamo.record("beta", report(4, cost_usd=2.0))
    items = list(backend.table(names.TABLE_COORDINATION).scan()["Items"])
    sqlite = SqliteCostLedger(Database(tmp_path / "migrated.db"))
    other = {"pk": "TEAM#alpha", "sk": "EVENT#2026-01-01T00:00:00.000000Z#evt-1"}
    assert sqlite.migrate_items([*items, other]) == 4
    for team in ("alpha", "beta"):
        assert sqlite.reports_since(team, None) == dynamo.reports_since(team, None)
    since = T0 + timedelta(minutes=2)
    assert sqlite.reports_since("alpha", since) == dynamo.reports_since("alpha", since)
    assert sqlite.migrate_items(items) == 4  # a repeated migration adds nothing
    assert len(sqlite.reports_since("alpha", None)) == 3
