"""`cairn bench index` on a tiny corpus: both paths index every chunk (figures are for
`make bench`, never asserted)."""

from __future__ import annotations

from pathlib import Path

import pytest

from shared.bench import index


def test_the_generated_corpus_is_the_size_asked_for(tmp_path: Path) -> None:
    index.write_corpus(tmp_path, files=3, sections=2)
    files = sorted(tmp_path.iterdir())
    assert [f.name for f in files] == ["runbook-000.md", "runbook-001.md", "runbook-002.md"]
    assert files[0].read_text().count("\n## Section ") == 2


@pytest.mark.bench
@pytest.mark.protocol
def test_a_tiny_index_bench_indexes_directly_and_through_a_server() -> None:
    figures = index.run(files=2, sections=1, progress=False)

    assert figures["direct"]["chunks"] == figures["through_server"]["chunks"] > 0
    for path in ("direct", "through_server"):
        assert figures[path]["chunks_per_second"] > 0


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(SystemExit):
        index.main(["--files", "0"])
