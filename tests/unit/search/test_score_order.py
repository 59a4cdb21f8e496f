"""Scores never rise down a page (the engine's order stays, a score is capped by the one above
it), and only a perfect match reads 1.0 (the calibrated relevance no longer saturates)."""

from __future__ import annotations

import itertools
import time
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
    IndexQuery,
    SearchFilters,
    SearchInput,
)
from shared.search.service import SearchService, scores_never_rise
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


def test_a_page_keeps_the_fused_order_and_each_score_is_capped_by_the_one_above() -> None:
    page = IndexPage(
        groups=[
            EntityHits("a", [ChunkHit(_chunk("a", 0), 0.136), ChunkHit(_chunk("a", 1), 0.2)]),
            EntityHits("b", [ChunkHit(_chunk("b", 0), 0.174), ChunkHit(_chunk("b", 1), 0.1)]),
            EntityHits("c", [ChunkHit(_chunk("c", 0), 0.12)]),
            EntityHits("d", [ChunkHit(_chunk("d", 0), 0.9)]),
        ],
        has_more=True,
    )
    capped = scores_never_rise(page)
    assert [g.entity_id for g in capped.groups] == ["a", "b", "c", "d"]
    # An entity's chunks are listed best first; the first result's scores are its own.
    assert [h.chunk.chunk_index for h in capped.groups[0].hits] == [1, 0]
    assert [h.score for h in capped.groups[0].hits] == [0.2, 0.136]
    # Below it, no score exceeds the entity listed above: never overstated, never rising.
    assert [h.score for h in capped.groups[1].hits] == [0.174, 0.1]
    assert [g.score for g in capped.groups] == [0.2, 0.174, 0.12, 0.12]
    assert capped.has_more is True


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
        # Scores never rise down the list; each result lists its chunks best first.
        scores = [r.chunks[0].score for r in page.results]
        assert _in_order(scores), (query, scores)
        for result in page.results:
            assert _in_order([c.score for c in result.chunks])
        memories = [score for _, score in service.search_memories("t", query, 20)]
        assert _in_order(memories), (query, memories)


def test_a_single_mode_page_keeps_its_ranking_order(tmp_path: Path) -> None:
    """bm25 and vector are one ranking each (the benchmark's view of a leg): a bm25 query has
    no vector, so its scores rest on word coverage alone, and ordering by them would rank by
    coverage instead of BM25 (SciFact's BM25 nDCG@10 fell from 0.694 to 0.626 that way)."""
    embedder = HashingEmbedder()
    index = EmbeddedIndex(tmp_path, embedder.dimensions)
    service = SearchService(MemoryDocumentStore(), index, embedder)
    # A short text repeating the rare word outranks (BM25) the long one holding both words,
    # whose coverage is higher.
    filler = " ".join(f"filler{i}" for i in range(60))
    documents = [
        DocumentInput(source="s", source_id="rare", title="r", text="zebra zebra zebra zebra"),
        DocumentInput(source="s", source_id="both", title="b", text=f"apple zebra {filler}"),
        *(
            DocumentInput(source="s", source_id=f"a{i}", title=f"a{i}", text=f"apple note {i}")
            for i in range(8)
        ),
    ]
    service.upsert_documents("t", documents)
    reordered = False
    for query in ("apple zebra", "zebra", "apple note", "note zebra apple"):
        filters = SearchFilters(team="t", now=time.time())
        engine = index.query(IndexQuery(text=query, vector=None, filters=filters, mode="bm25"))
        page = service.search("t", query, mode="bm25")
        assert [g.entity_id for g in page.groups] == [g.entity_id for g in engine.groups]
        by_score = sorted(engine.groups, key=lambda g: -g.score)
        reordered |= [g.entity_id for g in by_score] != [g.entity_id for g in engine.groups]
    assert reordered  # the case is one where ordering by score would have changed the page
