"""`cairn bench portability` on a tiny run: every record goes in, comes out and is not written
twice (figures are for `make bench`, never asserted)."""

from __future__ import annotations

import pytest

from shared.bench import portability


@pytest.mark.bench
def test_a_tiny_portability_bench_moves_every_record() -> None:
    (row,) = portability.run([300])  # run() itself checks the counts of each phase
    assert row["records"] == 300
    assert row["import_per_s"] > 0
    assert row["export_per_s"] > 0
    assert row["import_peak_mib"] > 0
