"""Reciprocal rank fusion and grouping by entity: the ranking rules both adapters share."""

from __future__ import annotations

from pathlib import Path

import pytest

from shared.search.adapters.embedded import EmbeddedConfig, EmbeddedIndex
from shared.search.fusion import (
    Calibration,
    FusionConfig,
    coverage,
    fuse,
    group_by_entity,
    query_stems,
    rrf,
)
from shared.search.models import ChunkDoc, IndexQuery, SearchFilters
from tests.unit.search.support import HashingEmbedder


def test_a_document_first_in_both_rankings_scores_one() -> None:
    fused = rrf([(["a", "b"], 1.0), (["a", "c"], 1.0)], k=60)
    assert fused[0] == ("a", pytest.approx(1.0))


def test_rrf_scores_follow_the_formula_with_k_60() -> None:
    fused = dict(rrf([(["a", "b"], 1.0), (["b", "a"], 1.0)], k=60))
    best = 2 / 61
    assert fused["a"] == pytest.approx((1 / 61 + 1 / 62) / best)
    assert fused["a"] == pytest.approx(fused["b"])


def test_documents_found_by_both_rankings_beat_documents_found_by_one() -> None:
    # "both" is only 3rd in each list, yet it outranks each list's winner.
    fused = rrf([(["x", "y", "both"], 1.0), (["p", "q", "both"], 1.0)], k=60)
    assert fused[0][0] == "both"


def test_weights_shift_the_fusion_towards_one_ranking() -> None:
    fused = rrf([(["lexical"], 2.0), (["semantic"], 1.0)], k=60)
    assert [key for key, _ in fused] == ["lexical", "semantic"]


def test_ties_break_deterministically() -> None:
    first = rrf([(["b", "a"], 1.0), (["a", "b"], 1.0)])
    second = rrf([(["a", "b"], 1.0), (["b", "a"], 1.0)])
    assert first == second
    assert [key for key, _ in first] == ["a", "b"]


def test_a_zero_weight_ranking_is_ignored() -> None:
    assert [key for key, _ in rrf([(["a"], 1.0), (["z"], 0.0)])] == ["a"]


def test_single_modes_use_one_ranking_only() -> None:
    config = FusionConfig(bm25_weight=0.7, vector_weight=1.3)
    assert config.weights("bm25") == (1.0, 0.0)
    assert config.weights("vector") == (0.0, 1.0)
    assert config.weights("hybrid") == (0.7, 1.3)


def test_grouping_keeps_at_most_three_chunks_per_entity_best_first() -> None:
    ranked = [(f"a:{i}", 1.0 - i / 10) for i in range(5)] + [("b:0", 0.1)]
    page, more = group_by_entity(ranked, lambda c: c.split(":")[0], offset=0, limit=10)
    assert page[0] == ("a", [("a:0", 1.0), ("a:1", 0.9), ("a:2", 0.8)])
    assert page[1][0] == "b"
    assert more is False


def test_an_entity_ranks_by_its_best_chunk() -> None:
    ranked = [("b:3", 0.9), ("a:0", 0.8), ("b:1", 0.7)]
    page, _ = group_by_entity(ranked, lambda c: c.split(":")[0], offset=0, limit=10)
    assert [entity for entity, _ in page] == ["b", "a"]


def test_pages_cut_entities_without_gaps_or_repeats() -> None:
    ranked = [(f"e{i}:0", 1.0 / (i + 1)) for i in range(7)]
    seen: list[str] = []
    offset = 0
    while True:
        page, more = group_by_entity(ranked, lambda c: c.split(":")[0], offset=offset, limit=3)
        seen += [entity for entity, _ in page]
        if not more:
            break
        offset += 3
    assert seen == [f"e{i}" for i in range(7)]


def test_a_hits_score_is_its_relevance_whatever_the_fusion_k(tmp_path: Path) -> None:
    # The score is a calibrated relevance of the chunk's own evidence (cosine, query-word
    # coverage), not the normalised RRF value, which moved with k: the same data under k=60
    # and the default k=10 scores every hit the same, and the best hit is not pinned to 1.0.
    embedder = HashingEmbedder()
    texts = [
        "rollback a kubernetes deployment",
        "kubernetes deployment strategies",
        "rolling back database migrations",
        "deployment checklists for kubernetes clusters",
        "the kubernetes scheduler",
    ]
    docs = [
        ChunkDoc(
            team="t",
            entity_id=f"e{i}",
            chunk_id=f"e{i}:0",
            chunk_index=0,
            text=text,
            title=f"doc {i}",
            source="s",
        )
        for i, text in enumerate(texts)
    ]
    question = "rollback kubernetes deployment"
    scores: dict[int, dict[str, float]] = {}
    for k in (10, 60):
        index = EmbeddedIndex(
            tmp_path / f"k{k}", embedder.dimensions, EmbeddedConfig(fusion=FusionConfig(k=k))
        )
        index.index(docs, embedder.embed([d.embedding_text() for d in docs]))
        page = index.query(
            IndexQuery(
                text=question,
                vector=[float(x) for x in embedder.embed([question])[0]],
                filters=SearchFilters(team="t", now=0.0),
                limit=10,
            )
        )
        scores[k] = {g.entity_id: g.hits[0].score for g in page.groups}

    assert scores[10] == scores[60]
    assert all(0.0 < score < 1.0 for score in scores[10].values())


def test_relevance_is_calibrated_on_the_chunks_own_evidence() -> None:
    calibration = Calibration()
    # A chunk with the query's words and meaning is near 1, one with neither near 0, and
    # neither depends on the other chunks of the query (unlike normalised RRF's 1.0 on top).
    assert calibration.relevance(0.8, 1.0) > 0.99
    assert calibration.relevance(0.1, 0.0) < 0.01
    assert calibration.relevance(0.5, 0.5) > calibration.relevance(0.4, 0.5)


def test_fuse_cuts_chunks_without_evidence_but_keeps_every_full_word_match() -> None:
    vector = [("close", 0.8), ("unrelated", 0.05), ("all-words", 0.02)]
    coverage_of = {"all-words": 1.0, "close": 0.5}
    fused = fuse(["all-words", "close"], vector, coverage_of, "hybrid", FusionConfig())
    assert [key for key, _ in fused] == ["close", "all-words"]
    assert all(0.0 < score < 1.0 for _, score in fused)


def test_single_modes_keep_every_candidate() -> None:
    vector = [("close", 0.8), ("unrelated", 0.05)]
    assert [k for k, _ in fuse([], vector, {}, "vector", FusionConfig())] == [
        "close",
        "unrelated",
    ]


def test_coverage_finds_query_words_at_word_starts_only() -> None:
    stems = query_stems("deploys freezing")
    assert coverage(stems, "Deployment freeze starts Friday") == 1.0
    assert coverage(stems, "redeploying is not a match for the start of a word") == 0.0
    assert coverage(query_stems("the of and"), "anything") == 0.0
