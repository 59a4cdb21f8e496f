"""The embedded index returns the pinned pages of a fixed corpus, whichever BM25 plan the
team's size chooses: one OR statement (small teams) or the level-by-level walk (large)."""

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


@pytest.mark.parametrize("levels_from_rows", [embedded.LEVELS_FROM_ROWS, 0], ids=["one", "levels"])
def test_pages_are_the_pinned_ones(
    index: EmbeddedIndex, levels_from_rows: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(embedded, "LEVELS_FROM_ROWS", levels_from_rows)
    pinned = json.loads(GOLDEN.read_text())
    pages = [page_of(index, query) for query in queries()]
    assert len(pages) == len(pinned)
    for number, (page, expected) in enumerate(zip(pages, pinned, strict=True)):
        assert page == expected, number
