"""Reranking a ranked page: the fused top-k entities rescored by a cross-encoder, paging intact.

The index fuses BM25 and vectors into a ranked list of entities; a `Reranker` (the port in
`shared.search.ports`) then scores (query, passage) pairs for the first `depth` entities only
and reorders them. An entity's passage is its best chunk (title, blank line, text: what the
embedder saw), so a page of `depth` entities costs `depth` pairs.

Paging stays gap-free: positions `< depth` come from the reranked top-k (the same for every
page, as the fused list is), positions `>= depth` keep the fused order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from shared.search.models import EntityHits, IndexPage, IndexQuery
from shared.search.ports import Reranker

# The stage costs one pair per position (linear in the depth); what each depth can reach is
# the fused recall@k on SciFact train (docs/search.md, "Reranking").
DEFAULT_DEPTH = 20


@dataclass(frozen=True)
class RerankConfig:
    depth: int = DEFAULT_DEPTH

    def __post_init__(self) -> None:
        if self.depth < 1:
            raise ValueError(f"rerank depth must be at least 1 (got {self.depth})")


def passage(group: EntityHits) -> str:
    """The text a reranker reads for an entity: its best chunk with its title."""
    return group.hits[0].chunk.embedding_text() if group.hits else ""


def rerank_groups(reranker: Reranker, query: str, groups: list[EntityHits]) -> list[EntityHits]:
    """`groups` reordered by the reranker's score, best first (ties keep the fused order)."""
    if len(groups) < 2:
        return list(groups)
    scores = reranker.rerank(query, [passage(g) for g in groups])
    if len(scores) != len(groups):
        raise ValueError(f"reranker returned {len(scores)} scores for {len(groups)} passages")
    order = sorted(range(len(groups)), key=lambda i: (-scores[i], i))
    return [groups[i] for i in order]


def reranked_page(
    run: Callable[[IndexQuery], IndexPage],
    query: IndexQuery,
    reranker: Reranker,
    config: RerankConfig,
) -> IndexPage:
    """The page `query` asks for, its first `config.depth` positions reranked."""
    from dataclasses import replace

    depth = config.depth
    if query.offset >= depth:
        return run(query)
    top = run(replace(query, offset=0, limit=depth))
    ranked = rerank_groups(reranker, query.text, top.groups)
    end = query.offset + query.limit
    groups = ranked[query.offset : end]
    if end <= depth:
        has_more = len(ranked) > end or top.has_more
        return IndexPage(groups=groups, has_more=has_more)
    if not top.has_more:
        return IndexPage(groups=groups, has_more=False)
    rest = run(replace(query, offset=depth, limit=end - depth))
    return IndexPage(groups=groups + rest.groups, has_more=rest.has_more)
