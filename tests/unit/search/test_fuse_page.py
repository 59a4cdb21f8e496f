"""`fuse_page` (the embedded index's fusion, asking coverage lazily) gives exactly the page
of `group_by_entity(fuse(...))`, the fusion both adapters share, in every mode."""

from __future__ import annotations

import random

import pytest

from shared.search.fusion import FusionConfig, fuse, fuse_page, group_by_entity
from shared.search.models import SearchMode

MODES: tuple[SearchMode, ...] = ("hybrid", "bm25", "vector")


def rankings(seed: int) -> tuple[list[int], list[tuple[int, float]], dict[int, float]]:
    rng = random.Random(seed)
    bm25 = rng.sample(range(400), rng.randint(0, 120))
    vector = [(key, rng.uniform(-0.1, 0.6)) for key in rng.sample(range(400), rng.randint(0, 120))]
    vector.sort(key=lambda pair: -pair[1])
    # Coverage only for BM25 rows, some of them full (always evidence), some read as gone.
    coverage_of = {key: rng.choice((0.0, 0.25, 0.5, 1.0)) for key in bm25 if rng.random() < 0.9}
    return bm25, vector, coverage_of


@pytest.mark.parametrize("mode", MODES)
def test_fuse_page_is_group_by_entity_of_fuse(mode: SearchMode) -> None:
    config = FusionConfig()
    compared = asked_less = 0
    asked: list[int] = []
    for seed in range(150):
        bm25, vector, coverage_of = rankings(seed)

        def coverage(key: int, coverage_of: dict[int, float] = coverage_of) -> float:
            asked.append(key)
            return coverage_of.get(key, 0.0)

        def entity_of(key: int) -> str:
            return f"e{key // 3}"  # three chunks an entity

        for offset, limit in ((0, 10), (5, 20), (0, 200)):
            expected = group_by_entity(
                fuse(bm25, vector, coverage_of, mode, config), entity_of, offset, limit
            )
            asked.clear()
            told: list[int] = []
            page = fuse_page(
                bm25,
                vector,
                coverage,
                mode,
                config,
                entity_of,
                offset,
                limit,
                before_scoring=told.extend,
            )
            assert page == expected, (seed, offset, limit)
            # The page's chunks are announced, in page order (the adapter reads them then).
            assert told == [key for _, hits in page[0] for key, _ in hits]
            compared += 1
            asked_less += len(set(asked)) < len(bm25)
    assert compared == 450
    assert asked_less > 100  # coverage is indeed asked of fewer rows than fuse computes


def test_past_the_page_only_its_entities_chunks_are_weighed() -> None:
    # 300 BM25 chunks of 150 entities, every cosine under the cut-off line: each candidate's
    # evidence is its coverage. Once the page's 10 entities and an 11th are found, only a
    # chunk of a page entity with room can change the page, so few coverages are asked.
    config = FusionConfig()
    bm25 = list(range(300))
    vector = [(key, 0.05) for key in range(300, 0, -1)]
    asked: list[int] = []

    def coverage(key: int) -> float:
        asked.append(key)
        return 1.0

    def entity_of(key: int) -> str:
        return f"e{key % 150}"  # an entity's second chunk comes 150 places later

    page = fuse_page(bm25, vector, coverage, "hybrid", config, entity_of, 0, 10)
    expected = group_by_entity(
        fuse(bm25, vector, dict.fromkeys(bm25, 1.0), "hybrid", config), entity_of, 0, 10
    )
    assert page == expected
    page_chunks = {key for _, hits in page[0] for key, _ in hits}
    assert len(set(asked) - page_chunks) <= 1  # the 11th entity's chunk, which shows more follow
