"""`cairn bench connectors` on a tiny repository: every sync succeeds and the unchanged commit
writes nothing (figures are for `make bench`, never asserted)."""

from __future__ import annotations

import pytest

from shared.bench import connectors


@pytest.mark.bench
def test_a_tiny_connectors_bench_syncs_edits_and_skips_an_unchanged_commit() -> None:
    figures = connectors.run(files=4, sections=1, progress=False)

    assert figures["first_sync"]["chunks_written"] > 0
    assert figures["unchanged_commit"]["chunks_written"] == 0
    assert figures["edit_a_tenth"]["tombstoned"] == 1
    assert figures["first_sync"]["files_per_second"] > 0


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(SystemExit):
        connectors.main(["--files", "1"])
