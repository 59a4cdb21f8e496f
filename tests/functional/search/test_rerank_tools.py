"""The search tools through the tool layer with a reranker configured: the fused top-k comes
back in the reranker's order, pages stay whole, and team and scope rules are unchanged."""

from __future__ import annotations

from collections.abc import Sequence

from shared.search.rerank.stage import RerankConfig
from tests.functional.search.conftest import SearchHarness
from tests.functional.search.test_search_tools import add


class PrefersTheWordGuide:
    """Ranks passages mentioning "guide" first (a stand-in for a cross-encoder's judgement)."""

    model_id = "test/guide"

    def __init__(self) -> None:
        self.seen: list[list[str]] = []

    def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        self.seen.append(list(passages))
        return [1.0 if "guide" in p.lower() else 0.0 for p in passages]


def _setup(search: SearchHarness) -> PrefersTheWordGuide:
    for i in range(6):
        add(search, "alpha", f"deploy-{i}.md", "deploy deploy deploy steps " + "x " * i)
    add(search, "alpha", "guide.md", "deploy guide with many other words " * 8)
    add(search, "beta", "beta-guide.md", "deploy guide for beta")
    reranker = PrefersTheWordGuide()
    search.service.reranker = reranker
    search.service.rerank_config = RerankConfig(depth=7)
    return reranker


def test_search_returns_the_reranked_top_k(search: SearchHarness) -> None:
    reranker = _setup(search)
    search.service.reranker = None
    fused = [r["entity_title"] for r in search.call("search", {"query": "deploy"})["results"]]
    search.service.reranker = reranker
    titles = [r["entity_title"] for r in search.call("search", {"query": "deploy"})["results"]]
    assert fused.index("guide.md") in range(1, 7)  # in the fused top 7, not first
    assert titles[0] == "guide.md"
    assert sorted(titles[:7]) == sorted(fused[:7])
    assert titles[7:] == fused[7:]
    assert "beta-guide.md" not in titles
    # Another team's documents never reach the reranker.
    assert all("beta" not in p for batch in reranker.seen for p in batch)


def test_pages_of_a_reranked_search_have_no_gaps_or_repeats(search: SearchHarness) -> None:
    _setup(search)
    whole = [
        r["entity_id"] for r in search.call("search", {"query": "deploy", "limit": 20})["results"]
    ]
    paged: list[str] = []
    cursor = None
    while True:
        arguments = {"query": "deploy", "limit": 3} | ({"cursor": cursor} if cursor else {})
        page = search.call("search", arguments)
        paged += [r["entity_id"] for r in page["results"]]
        cursor = page.get("next_cursor")
        if not cursor:
            break
    assert paged == whole


def test_search_references_is_reranked_too(search: SearchHarness) -> None:
    reranker = _setup(search)
    add(search, "alpha", "references/a.md", "deploy deploy reference", source="references")
    add(search, "alpha", "references/b.md", "deploy reference guide and more", source="references")
    result = search.call("search_references", {"query": "deploy reference", "limit": 2})
    assert [r["path"] for r in result["results"]] == ["references/b.md", "references/a.md"]
    # Only references were reranked: the source filter applies before the reranker.
    assert all("reference" in p for p in reranker.seen[-1])
