"""`cairn bench gateway` on a tiny run: it serves, measures every operation and stops cleanly
(figures are for `make bench`, never asserted)."""

from __future__ import annotations

import pytest

from shared.bench import gateway

OPERATIONS = {
    "ping",
    "tools/list",
    "memory_put",
    "memory_get",
    "memory_search",
    "search",
    "recall",
    "store_handoff",
}


@pytest.mark.bench
@pytest.mark.protocol
def test_a_tiny_gateway_bench_reports_every_operation_and_throughput() -> None:
    figures = gateway.run(calls=2, clients=2, seconds=0.5, progress=False, memories=10)

    assert set(figures) >= OPERATIONS
    for name in OPERATIONS:
        assert figures[name]["p99_ms"] >= figures[name]["p50_ms"] > 0
    assert figures["throughput"]["errors"] == 0
    assert figures["throughput"]["requests_per_second"] > 0


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(SystemExit):
        gateway.main(["--calls", "0"])
