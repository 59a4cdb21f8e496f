"""`cairn bench store` on a tiny run: it seeds through the adapters, serves on SQLite, measures
every operation, races agents on claims without a double claim, and stops cleanly (figures are
for `make bench`, never asserted). `make bench` runs it; in `make test`, exactly one winner per
claim is the store contract's and the gateway's own tests (test_task_store_contract,
test_orchestrator_tasks)."""

from __future__ import annotations

import pytest

from shared.bench import store

OPERATIONS = {"memory_put", "memory_get", "recall", "task.poll", "task.claim", "list_handoffs"}


@pytest.mark.bench
@pytest.mark.protocol
def test_a_tiny_store_bench_reports_every_operation_and_no_double_claim() -> None:
    figures = store.measure("sqlite", size=60, calls=3, agents=3, seconds=1.0)

    assert figures["backend"] == "sqlite"
    for name in OPERATIONS:
        assert figures[name]["p99_ms"] >= figures[name]["p50_ms"] > 0
    race = figures["claim_race"]
    assert race["claims"] > 0
    assert race["errors"] == 0
    assert race["double_claims"] == 0
