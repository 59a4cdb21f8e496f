"""Ranks follow scores: a page lists its results best score first, and only a perfect match
reads 1.0 (the calibrated relevance no longer saturates)."""

from __future__ import annotations

import itertools
from dataclasses import replace
from pathlib import Path

from shared.search.adapters.embedded import EmbeddedIndex
from shared.search.fusion import Calibration
from shared.search.models import (
    ChunkDoc,
    ChunkHit,
    DocumentInput,
    EntityHits,
    IndexPage,
    SearchInput,
)
from shared.search.service import SearchService, by_score
from tests.unit.search.support import HashingEmbedder, MemoryDocumentStore


def _chunk(entity: str, index: int) -> ChunkDoc:
    return ChunkDoc(
        team="t",
        entity_id=entity,
        chunk_id=f"{entity}:{index}",
        chunk_index=index,
        text="x",
        title=entity,
        source="s",
        result_type="entity",
        chunk_type="text",
        char_offset_start=0,
        char_offset_end=1,
    )


def _in_order(scores: list[float]) -> bool:
    return all(a >= b for a, b in itertools.pairwise(scores))


def test_a_page_in_fused_order_is_listed_by_score_ties_keeping_that_order() -> None:
    page = IndexPage(
        groups=[
            EntityHits("a", [ChunkHit(_chunk("a", 0), 0.136), ChunkHit(_chunk("a", 1), 0.2)]),
            EntityHits("b", [ChunkHit(_chunk("b", 0), 0.174)]),
            EntityHits("c", [ChunkHit(_chunk("c", 0), 0.174)]),
        ],
        has_more=True,
    )
    ordered = by_score(page)
    assert [g.entity_id for g in ordered.groups] == ["a", "b", "c"]
    assert [h.score for h in ordered.groups[0].hits] == [0.2, 0.136]
    assert [g.score for g in ordered.groups] == [0.2, 0.174, 0.174]
    assert ordered.has_more is True


def test_a_perfect_match_reads_one_and_a_good_one_does_not() -> None:
    calibration = Calibration()
    assert round(calibration.relevance(1.0, 1.0), 4) == 1.0
    good = calibration.relevance(0.7, 1.0)
    assert 0.95 < good < 0.9995
    assert calibration.relevance(0.75, 1.0) > good  # more evidence, a higher score
    # The fitted probability alone saturated: both read 1.0.
    saturating = replace(calibration, saturation_share=0.0)
    assert round(saturating.relevance(0.7, 1.0), 4) == round(saturating.relevance(1.0, 1.0), 4)
    assert calibration.relevance(0.1, 0.0) < 0.01  # no evidence stays near 0


def test_search_and_memory_search_scores_never_rise_down_the_list(tmp_path: Path) -> None:
    embedder = HashingEmbedder()
    service = SearchService(
        MemoryDocumentStore(), EmbeddedIndex(tmp_path, embedder.dimensions), embedder
    )
    words = ["deploy", "freeze", "friday", "billing", "invoice", "rounding", "redis", "pool"]
    documents = [
        DocumentInput(
            source="local_files",
            source_id=f"d{i}.md",
            title=" ".join(words[i % 8 : i % 8 + 2]),
            text=" ".join(words[(i * 3 + j) % 8] for j in range(6 + i % 5)) + f" note {i}",
        )
        for i in range(30)
    ]
    service.upsert_documents("t", documents)
    for i in range(20):
        text = " ".join(words[(i * 5 + j) % 8] for j in range(3 + i % 4))
        service.index_memory("t", f"m{i}", f"k{i}", text, ["ops"])
    for a, b in itertools.combinations(words, 2):
        query = f"{a} {b}"
        page = service.search_page("t", SearchInput(query=query, limit=20), may_read_memory=True)
        # Results rank by their best chunk; each lists its chunks best first.
        scores = [r.chunks[0].score for r in page.results]
        assert _in_order(scores), (query, scores)
        for result in page.results:
            assert _in_order([c.score for c in result.chunks])
        memories = [score for _, score in service.search_memories("t", query, 20)]
        assert _in_order(memories), (query, memories)
