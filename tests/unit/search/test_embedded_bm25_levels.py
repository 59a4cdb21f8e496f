"""The embedded index's level-by-level BM25 returns exactly what one OR query returns.

At scale the embedded index does not ask FTS5 for `"a" OR "b" OR "c"` ordered by bm25() (which
scores every matching row), but visits terms rarest first and stops once no unseen row can
enter the top (`EmbeddedIndex._bm25_by_levels`). These tests pin that the rows and their order
are the OR query's, on a Zipf-distributed corpus where the early stop actually happens, with
and without the source and result-type filters.
"""

from __future__ import annotations

import numpy as np
import pytest

from shared.search.adapters import embedded
from shared.search.adapters.embedded import EmbeddedIndex, fts_table, scope_match
from shared.search.models import ChunkDoc, IndexQuery, SearchFilters

TEAM = "acme"
ROWS = 2_400  # above PRUNE_FROM_ROWS: the frequencies that drive the levels are counted
DEPTHS = (5, 40, 300)


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> EmbeddedIndex:
    rng = np.random.default_rng(3)
    vocabulary = [f"word{i}" for i in range(3_000)]
    weights = 1.0 / np.arange(1, len(vocabulary) + 1) ** 1.07
    weights /= weights.sum()
    words = rng.choice(len(vocabulary), size=(ROWS, 64), p=weights)
    title_words = rng.choice(len(vocabulary), size=(ROWS, 3), p=weights)
    lengths = rng.integers(8, 64, size=ROWS)  # varied lengths: BM25's length norm matters
    docs = [
        ChunkDoc(
            team=TEAM,
            entity_id=f"e{i}",
            chunk_id=f"e{i}:0",
            chunk_index=0,
            text=" ".join(vocabulary[w] for w in words[i, : lengths[i]]),
            title=" ".join(vocabulary[w] for w in title_words[i]),
            source="wiki" if i % 3 else "notes",
            result_type="memory" if i % 5 == 0 else "entity",
        )
        for i in range(ROWS)
    ]
    vectors = rng.standard_normal((ROWS, 8)).astype(np.float32)
    built = EmbeddedIndex(tmp_path_factory.mktemp("levels"), 8)
    built.index(docs, vectors)
    return built


def queries(count: int) -> list[str]:
    rng = np.random.default_rng(5)
    weights = 1.0 / np.arange(1, 3_001) ** 1.07
    weights /= weights.sum()
    return [
        " ".join(f"word{w}" for w in rng.choice(3_000, size=int(rng.integers(2, 6)), p=weights))
        for _ in range(count)
    ]


FILTERS = [
    SearchFilters(team=TEAM, now=0.0, types=frozenset({"entity", "memory", "knowledge"})),
    SearchFilters(team=TEAM, now=0.0),
    SearchFilters(team=TEAM, now=0.0, source="notes", types=frozenset({"entity"})),
]


@pytest.mark.parametrize("filters", FILTERS, ids=["all", "default-types", "source-and-type"])
def test_levels_return_the_or_querys_rows_in_its_order(
    index: EmbeddedIndex, filters: SearchFilters
) -> None:
    table = fts_table(TEAM)
    scope = scope_match(filters)
    calls: list[str] = []
    full = index._bm25_rows

    def counted(table: str, expression: str, scope: str, limit: int) -> list[tuple[float, int]]:
        calls.append(expression)
        return full(table, expression, scope, limit)

    compared = stopped_early = 0
    for text in queries(60):
        terms, frequencies, rows = index._terms(TEAM, table, text)
        if len(terms) < 2 or not all(2 * frequencies[t] < rows for t in terms):
            continue
        for depth in DEPTHS:
            calls.clear()
            index._bm25_rows = counted  # type: ignore[method-assign]
            try:
                by_levels = index._bm25_by_levels(table, terms, frequencies, rows, scope, depth)
            finally:
                del index._bm25_rows
            one_query = full(table, " OR ".join(f'"{t}"' for t in terms), scope, depth)
            assert [r for _, r in by_levels] == [r for _, r in one_query], (text, depth)
            assert [s for s, _ in by_levels] == pytest.approx([s for s, _ in one_query])
            compared += 1
            # Every level but the last asks two statements; fewer means it stopped early.
            stopped_early += len(calls) < 2 * len(terms) - 1
    assert compared >= 60
    assert stopped_early >= compared // 4  # the path under test is the early-stopping one


def test_a_query_at_scale_ranks_by_the_levels_and_finds_the_best_match(
    index: EmbeddedIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The level plan is chosen from LEVELS_FROM_ROWS chunks: lowered so this index takes it.
    monkeypatch.setattr(embedded, "LEVELS_FROM_ROWS", ROWS)
    # A chunk holding two rare words in its title and text ranks first for a query of them
    # plus common words (the query goes through the level path: every term is under half).
    rare = "zyxwv qutsr"
    best = ChunkDoc(
        team=TEAM,
        entity_id="best",
        chunk_id="best:0",
        chunk_index=0,
        text=f"{rare} word1 word2",
        title=rare,
        source="wiki",
    )
    index.index([best], np.ones((1, 8), dtype=np.float32))
    page = index.query(
        IndexQuery(
            text=f"{rare} word40 word90",
            vector=None,
            filters=SearchFilters(team=TEAM, now=0.0),
            mode="bm25",
            limit=3,
        )
    )
    assert page.groups[0].entity_id == "best"
