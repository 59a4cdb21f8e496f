"""A fixed small corpus and queries whose embedded-index results are pinned in
fixtures/embedded/golden_pages.json (rows and order recorded from the engine before the
size-chosen BM25 plan and the lazy coverage; scores re-recorded once the fused score stopped
saturating at 1.0, with every page's rows and order unchanged: the same rows, order and
scores must come back)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from shared.search.models import ChunkDoc, IndexQuery, SearchFilters

TEAM = "golden"
ROWS = 2_600  # above PRUNE_FROM_ROWS, so term pruning takes part
DIMS = 16
GOLDEN = Path(__file__).parent / "fixtures" / "embedded" / "golden_pages.json"


def corpus() -> tuple[list[ChunkDoc], Any]:
    rng = np.random.default_rng(21)
    vocabulary = [f"word{i}" for i in range(2_000)]
    weights = 1.0 / np.arange(1, len(vocabulary) + 1) ** 1.07
    weights /= weights.sum()
    words = rng.choice(len(vocabulary), size=(ROWS, 60), p=weights)
    lengths = rng.integers(6, 60, size=ROWS)
    docs = [
        ChunkDoc(
            team=TEAM,
            entity_id=f"e{i // 2}",
            chunk_id=f"e{i // 2}:{i % 2}",
            chunk_index=i % 2,
            text=" ".join(vocabulary[w] for w in words[i, : lengths[i]]),
            title=vocabulary[int(words[i, 0])],
            source="wiki" if i % 3 else "notes",
            result_type="memory" if i % 7 == 0 else "entity",
            tags=("tagged",) if i % 11 == 0 else (),
        )
        for i in range(ROWS)
    ]
    vectors = rng.standard_normal((ROWS, DIMS)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return docs, vectors


def queries() -> list[IndexQuery]:
    rng = np.random.default_rng(22)
    weights = 1.0 / np.arange(1, 2_001) ** 1.07
    weights /= weights.sum()
    asked = []
    filters = [
        SearchFilters(team=TEAM, now=0.0),
        SearchFilters(team=TEAM, now=0.0, source="notes", types=frozenset({"entity"})),
    ]
    for n in range(40):
        words = rng.choice(2_000, size=int(rng.integers(1, 7)), p=weights)
        vector = rng.standard_normal(DIMS).astype(np.float32)
        vector /= np.linalg.norm(vector)
        for mode in ("hybrid", "bm25", "vector"):
            asked.append(
                IndexQuery(
                    text=" ".join(f"word{w}" for w in words) + (" tagged" if n % 5 == 0 else ""),
                    vector=None if mode == "bm25" and n % 2 else [float(x) for x in vector],
                    filters=filters[n % 2],
                    mode=mode,
                    limit=15,
                    offset=5 if n % 4 == 3 else 0,
                )
            )
    return asked


def page_of(index: Any, query: IndexQuery) -> dict[str, Any]:
    page = index.query(query)
    return {
        "has_more": page.has_more,
        "groups": [
            [g.entity_id, [[h.chunk.chunk_id, round(h.score, 12)] for h in g.hits]]
            for g in page.groups
        ],
    }
