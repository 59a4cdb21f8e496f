"""Reciprocal rank fusion, grouping by entity and offset pagination: shared by every adapter.

Both index adapters produce two rankings (BM25, vector) of chunk keys and hand them here, so
hybrid ranking, grouping and paging behave identically on OpenSearch and on the embedded index.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from shared.search.models import SearchMode

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True)
class FusionConfig:
    """How rankings are fused.

    The defaults are tuned on SciFact's train split (docs/search.md): k = 10 with equal
    weights scored nDCG@10 0.736 on train against 0.731 for the textbook k = 60 (both with
    title-weighted BM25); a smaller k lets the top of each ranking count for more.
    `FusionConfig(k=60)` restores the textbook fusion; the weights stay tunable.

    `depth` is how many chunks each ranking contributes. It is fixed per query (not derived
    from the page asked for) so every page of one query is cut from the same fused list:
    that is what makes cursor pagination free of gaps and repeats.
    """

    k: int = 10
    bm25_weight: float = 1.0
    vector_weight: float = 1.0
    depth: int = 300

    def weights(self, mode: SearchMode) -> tuple[float, float]:
        """(bm25, vector) weights for `mode`; a single-ranking mode zeroes the other."""
        if mode == "bm25":
            return 1.0, 0.0
        if mode == "vector":
            return 0.0, 1.0
        return self.bm25_weight, self.vector_weight


def rrf(
    rankings: Sequence[tuple[Sequence[K], float]], k: int = 60, tie_key: Callable[[K], str] = str
) -> list[tuple[K, float]]:
    """Fuse rankings: score(d) = Σ wᵢ / (k + rankᵢ(d)), ranks from 1; normalised to (0, 1].

    A document first in every ranking scores 1.0. Ties break on `tie_key` so the order is
    deterministic.

    >>> rrf([(["a", "b"], 1.0), (["b", "c"], 1.0)])[0][0]
    'b'
    """
    scores: dict[K, float] = {}
    best = sum(weight / (k + 1) for ranked, weight in rankings if weight > 0 and ranked)
    for ranked, weight in rankings:
        if weight <= 0:
            continue
        for rank, key in enumerate(ranked, start=1):
            scores[key] = scores.get(key, 0.0) + weight / (k + rank)
    if not scores:
        return []
    ordered = sorted(scores.items(), key=lambda item: (-item[1], tie_key(item[0])))
    return [(key, score / best) for key, score in ordered]


def group_by_entity(
    ranked: Sequence[tuple[K, float]],
    entity_of: Callable[[K], str],
    offset: int,
    limit: int,
    per_entity: int = 3,
) -> tuple[list[tuple[str, list[tuple[K, float]]]], bool]:
    """Group a chunk ranking by entity, then cut page `[offset, offset + limit)` of entities.

    An entity ranks by its best chunk; it keeps at most `per_entity` chunks, best first.
    Returns the page and whether more entities follow it.

    >>> page, more = group_by_entity([("a:0", 0.9), ("b:0", 0.8), ("a:1", 0.7)],
    ...                              lambda c: c.split(":")[0], offset=0, limit=1)
    >>> page, more
    ([('a', [('a:0', 0.9), ('a:1', 0.7)])], True)
    """
    groups: dict[str, list[tuple[K, float]]] = {}
    for key, score in ranked:
        members = groups.setdefault(entity_of(key), [])
        if len(members) < per_entity:
            members.append((key, score))
    entities = list(groups.items())
    page = entities[offset : offset + limit]
    return page, len(entities) > offset + limit
