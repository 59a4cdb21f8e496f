"""The embedded index returns the pinned pages of a fixed corpus, whichever BM25 plan runs:
the postings scored in numpy (the default) or FTS5's own bm25() statement (the fallback)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shared.search.adapters import embedded
from shared.search.adapters.embedded import EmbeddedIndex
from tests.unit.search.golden_corpus import DIMS, GOLDEN, corpus, page_of, queries


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> EmbeddedIndex:
    built = EmbeddedIndex(Path(tmp_path_factory.mktemp("golden")), DIMS)
    docs, vectors = corpus()
    built.index(docs, vectors)
    return built


@pytest.mark.parametrize("score_postings", [True, False], ids=["postings", "statement"])
def test_pages_are_the_pinned_ones(
    index: EmbeddedIndex, score_postings: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(embedded, "SCORE_POSTINGS", score_postings)
    pinned = json.loads(GOLDEN.read_text())
    pages = [page_of(index, query) for query in queries()]
    assert len(pages) == len(pinned)
    for number, (page, expected) in enumerate(zip(pages, pinned, strict=True)):
        assert page == expected, number


def test_a_hybrid_page_reads_only_the_rows_its_cut_off_asks(
    index: EmbeddedIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The cut-off asks the words of BM25 rows only as far as the page needs: they are read
    # 64 at a time in BM25 order, not all 300 up front; the pages stay the pinned ones above.
    read: list[int] = []
    records = index._records

    def counted(rowids: list[int]) -> dict[int, tuple[object, ...]]:
        read.extend(rowids)
        return records(rowids)

    monkeypatch.setattr(index, "_records", counted)
    hybrid = [q for q in queries() if q.mode == "hybrid" and q.limit <= 15]
    for query in hybrid:
        page_of(index, query)
    assert len(read) < 0.5 * 300 * len(hybrid)
