"""Ranking an agent can trust (issue 8, item 4): recall, memory_search and search on the real
MiniLM embedder and embedded index, through the tools.

A flagged exact match still ranks above unrelated memories; a query about something the team
never stored returns nothing; scores mean the same thing across queries.
"""

from __future__ import annotations

from typing import Any

from shared.bench.relevance import load_set
from shared.search.fusion import coverage, query_stems
from tests.functional.conftest import Harness

# Eight memories that have nothing to do with a deploy freeze, and the one that is it.
UNRELATED = [
    ("Coffee", "The team prefers oat milk in the coffee machine."),
    ("Office wifi", "The guest wifi password rotates monthly and is posted at reception."),
    ("Lunch", "Team lunch is ordered on Fridays; dietary needs go in the shared sheet."),
    ("Stand-up", "Stand-up is at 09:30 every day in the small meeting room."),
    ("Budget", "The monthly cloud budget is 40,000 USD with an alert at 80 percent."),
    ("Python style", "We format with ruff and type-check with mypy in strict mode."),
    ("Onboarding", "New engineers get a buddy and laptop setup in their first week."),
    ("Support", "Support tickets tagged bug are triaged within one business day."),
]


def _remember(harness: Harness, token: str, title: str, body: str) -> str:
    result = harness.call(token, "remember", {"title": title, "body": body})
    assert result["isError"] is False, result
    memory_id: str = result["memory_id"]
    return memory_id


def _recall(harness: Harness, token: str, query: str) -> list[dict[str, Any]]:
    result = harness.call(token, "recall", {"query": query, "include_ids": True})
    assert result["isError"] is False, result
    memories: list[dict[str, Any]] = result["memories"]
    return memories


def _search(harness: Harness, token: str, query: str) -> list[dict[str, Any]]:
    result = harness.call(token, "memory_search", {"query": query})
    assert result["isError"] is False, result
    hits: list[dict[str, Any]] = result["results"]
    return hits


def test_a_flagged_exact_match_still_ranks_above_unrelated_memories(harness: Harness) -> None:
    # Given the exact match for "deploy freeze" among eight unrelated memories, flagged...
    token = harness.token(team="alpha", agent_id="reviewer-bot")
    for title, body in UNRELATED:
        _remember(harness, token, title, body)
    freeze = _remember(
        harness, token, "Deploy freeze", "No production deploys from Friday 16:00 UTC."
    )
    harness.call(token, "flag_memory", {"memory_id": freeze, "reason": "now starts at 15:00"})

    # ...when an agent recalls "deploy freeze", it is first (not 9th of 9), still marked
    # flagged, and the unrelated memories are not returned at all.
    recalled = _recall(harness, token, "deploy freeze")
    assert recalled[0]["id"] == freeze
    assert recalled[0]["flagged"] is True
    assert len(recalled) == 1


def test_a_query_about_something_absent_returns_nothing(harness: Harness) -> None:
    token = harness.token(team="alpha")
    for title, body in UNRELATED:
        _remember(harness, token, title, body)
    assert _recall(harness, token, "what is the capital of Peru") == []
    assert _search(harness, token, "what is the capital of Peru") == []
    hits = harness.call(
        token, "search", {"query": "what is the capital of Peru", "types": ["memory"]}
    )
    assert hits["results"] == []


def test_the_top_score_tells_a_perfect_match_from_a_weak_one(harness: Harness) -> None:
    token = harness.token(team="alpha")
    for title, body in UNRELATED:
        _remember(harness, token, title, body)
    exact = _search(harness, token, "guest wifi password")
    # Only loosely about the lunch memory: a food order, but not its words.
    weak = _search(harness, token, "ordering food for the office party")
    # The perfect match scores near 1, the best of weak evidence well below it (with min-max
    # normalised fusion both tops were 1.0).
    assert exact[0]["score"] > 0.9
    assert weak
    assert weak[0]["score"] < 0.7


def test_the_labelled_no_match_queries_return_nothing(harness: Harness) -> None:
    # The no-match queries of the labelled relevance set that share no word with its corpus
    # (the cut-off was chosen on train only). Those that do share one ("rules of cricket" and
    # a memory on code review rules) are near misses the bench counts, not promises. The corpus
    # is stored once for both splits: embedding it is most of this test's time.
    labelled = load_set()
    token = harness.token(team="alpha")
    for memory in labelled.memories:
        result = harness.call(
            token,
            "memory_put",
            {"key": memory["key"], "content": memory["content"], "tags": memory["tags"]},
        )
        assert result["isError"] is False, result
    corpus = [(m["key"], m["content"], " ".join(m["tags"])) for m in labelled.memories]
    for split in ("train", "heldout"):
        no_match = [
            q.text
            for q in labelled.queries
            if not q.relevant
            and q.split == split
            and all(coverage(query_stems(q.text), *texts) == 0.0 for texts in corpus)
        ]
        assert len(no_match) >= 6, split
        for query in no_match:
            assert _search(harness, token, query) == [], (split, query)
