"""The embedded index's BM25 scored in numpy returns exactly what FTS5's one OR statement does.

The index does not ask FTS5 for `"a" OR "b" OR "c"` ordered by bm25() (which scores every
matching row in C, ~4 µs each), but scores the terms' cached postings in numpy with bm25()'s
own arithmetic (`EmbeddedIndex._bm25_scored`). These tests pin that the rows, their order
and their scores (to the bit) are the statement's, on a Zipf-distributed corpus with varied
lengths, titles, tags, filters and expired rows; that a word FTS5 reads as several tokens
still gets the statement's rows; and that the postings are read again after a write.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from shared.search.adapters import embedded
from shared.search.adapters.embedded import EmbeddedIndex, fts_table, scope_match
from shared.search.models import ChunkDoc, IndexQuery, SearchFilters

TEAM = "acme"
ROWS = 2_400  # above PRUNE_FROM_ROWS: common terms are pruned as in production
DEPTHS = (5, 40, 300)
EXPIRES_AT = 100.0


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
            tags=(vocabulary[int(words[i, 0])],) if i % 11 == 0 else (),
            expires_at=EXPIRES_AT if i % 13 == 0 else None,
        )
        for i in range(ROWS)
    ]
    vectors = rng.standard_normal((ROWS, 8)).astype(np.float32)
    built = EmbeddedIndex(tmp_path_factory.mktemp("postings"), 8)
    built.index(docs, vectors)
    return built


def queries(count: int) -> list[str]:
    rng = np.random.default_rng(5)
    weights = 1.0 / np.arange(1, 3_001) ** 1.07
    weights /= weights.sum()
    return [
        " ".join(f"word{w}" for w in rng.choice(3_000, size=int(rng.integers(1, 6)), p=weights))
        for _ in range(count)
    ]


FILTERS = [
    SearchFilters(team=TEAM, now=0.0, types=frozenset({"entity", "memory", "knowledge"})),
    SearchFilters(team=TEAM, now=0.0),
    SearchFilters(team=TEAM, now=0.0, source="notes", types=frozenset({"entity"})),
]


@pytest.mark.parametrize("filters", FILTERS, ids=["all", "default-types", "source-and-type"])
def test_numpy_scores_are_the_or_statements_to_the_bit(
    index: EmbeddedIndex, filters: SearchFilters
) -> None:
    table = fts_table(TEAM)
    scope = scope_match(filters)
    team = index._team_vectors(TEAM)
    compared = 0
    for text in queries(60):
        terms, _, _ = index._terms(TEAM, table, text)
        for depth in DEPTHS:
            scored = index._bm25_scored(team, table, terms, filters, depth)
            statement = index._bm25_rows(table, " OR ".join(f'"{t}"' for t in terms), scope, depth)
            assert scored == statement, (text, depth)  # rows, order and float scores
            compared += len(statement)
    assert compared > 10_000


@pytest.mark.parametrize("now", [0.0, 2 * EXPIRES_AT], ids=["live", "some-expired"])
def test_bm25_ranking_is_the_statements_with_expired_rows_left_out(
    index: EmbeddedIndex, now: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    for text in queries(30):
        for filters in (SearchFilters(team=TEAM, now=now), replace(FILTERS[2], now=now)):
            query = IndexQuery(text=text, vector=None, filters=filters, mode="bm25")
            scored = index._bm25(query, 300)
            monkeypatch.setattr(embedded, "SCORE_POSTINGS", False)
            statement = index._bm25(query, 300)
            monkeypatch.setattr(embedded, "SCORE_POSTINGS", True)
            assert scored == statement, text
            expired = [e for _, e in scored if int(e[1:]) % 13 == 0]
            assert not expired or now < EXPIRES_AT


def test_a_word_fts5_splits_in_two_takes_the_statement(index: EmbeddedIndex) -> None:
    # U+19B0 (a New Tai Lue vowel, a letter since Unicode 8) is a letter to Python, so the
    # query keeps the word whole, but a mark to FTS5's unicode61 (6.1) tables: two tokens.
    word = "word1\u19b0word2"
    assert index._fts_tokens(["word7", word]) is None
    filters = SearchFilters(team=TEAM, now=0.0)
    query = IndexQuery(text=f"word7 {word}", vector=None, filters=filters, mode="bm25")
    table = fts_table(TEAM)
    statement = index._bm25_rows(table, f'"word7" OR "{word}"', scope_match(filters), 300)
    assert [rowid for rowid, _ in index._bm25(query, 300)] == [r for _, r in statement]


def test_a_small_postings_budget_gives_the_same_rows(
    index: EmbeddedIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    filters = SearchFilters(team=TEAM, now=0.0)
    asked = [IndexQuery(text=t, vector=None, filters=filters, mode="bm25") for t in queries(40)]
    roomy = [index._bm25(q, 40) for q in asked]
    monkeypatch.setattr(embedded, "_MIN_POSTINGS", 64)
    monkeypatch.setattr(embedded, "_POSTINGS_PER_ROW", 0)
    index._invalidate({TEAM})  # the next query reads the team again, with the small budget
    assert [index._bm25(q, 40) for q in asked] == roomy
    terms = index._team_vectors(TEAM).terms
    assert terms is not None
    assert terms.held <= 64 + max(len(p.positions) for p in terms.postings.values())


def test_a_write_is_seen_by_the_next_query(index: EmbeddedIndex) -> None:
    # A chunk holding two rare words in its title and text ranks first for a query of them
    # plus common words, though the index's postings of those words were cached before it.
    rare = "zyxwv qutsr"
    query = IndexQuery(
        text=f"{rare} word40 word90",
        vector=None,
        filters=SearchFilters(team=TEAM, now=0.0),
        mode="bm25",
        limit=3,
    )
    before = index.query(query)
    assert all(g.entity_id != "best" for g in before.groups)
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
    page = index.query(query)
    assert page.groups[0].entity_id == "best"
