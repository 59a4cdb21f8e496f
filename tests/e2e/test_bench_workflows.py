"""`cairn bench workflows` on a tiny run: it serves, runs the workflows to completion, measures
every step hand-over and stops cleanly (figures are for `make bench`, never asserted)."""

from __future__ import annotations

import pytest

from shared.bench import workflows


@pytest.mark.bench
@pytest.mark.protocol
def test_a_tiny_workflow_bench_measures_every_step_hand_over() -> None:
    figures = workflows.run(steps=3, runs=1, progress=False)

    assert figures["samples"] == 2  # three steps: two hand-overs
    overhead = figures["step_to_next_claimable_ms"]
    assert overhead["p99"] >= overhead["p50"] > 0
    assert figures["standalone_complete_then_poll_ms"]["p50"] > 0


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(SystemExit):
        workflows.main(["--steps", "1"])
