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
