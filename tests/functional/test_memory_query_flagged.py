"""memory_query's `flagged` filter on both stores: the console's review queue lists flagged
memories with it, a page at a time, instead of scanning every memory for flags."""

from __future__ import annotations

from typing import Any

from tests.functional.conftest import Harness, ok
from tests.functional.test_memory_lifecycle import stores  # noqa: F401 (fixture)


def test_flagged_true_lists_only_flagged_memories_and_pages_them(stores: Harness) -> None:  # noqa: F811
    harness = stores
    token = harness.token()
    ids = [
        ok(harness, token, "memory_write", {"content": f"Fact number {n} about the build."})[
            "memory"
        ]["id"]
        for n in range(7)
    ]
    flagged = ids[1::2]  # three of seven
    for memory_id in flagged:
        ok(harness, token, "flag_memory", {"memory_id": memory_id, "reason": "outdated"})

    seen: list[str] = []
    cursor: str | None = None
    pages = 0
    while True:
        arguments: dict[str, Any] = {"flagged": True, "limit": 2}
        if cursor:
            arguments["cursor"] = cursor
        page = ok(harness, token, "memory_query", arguments)
        assert all(m["flags"] for m in page["memories"])
        seen += [m["id"] for m in page["memories"]]
        pages += 1
        cursor = page["next_cursor"]
        if not cursor:
            break
    unflagged = ok(harness, token, "memory_query", {"flagged": False, "limit": 100})["memories"]
    both = ok(harness, token, "memory_query", {"limit": 100})["memories"]

    assert sorted(seen) == sorted(flagged)
    assert pages == 2
    assert sorted(m["id"] for m in unflagged) == sorted(set(ids) - set(flagged))
    assert len(both) == 7


def test_flagged_combines_with_the_other_filters_and_is_team_scoped(stores: Harness) -> None:  # noqa: F811
    harness = stores
    alpha = harness.token(team="alpha")
    beta = harness.token(team="beta")
    decision = ok(
        harness, alpha, "memory_write", {"content": "We deploy with CDK.", "kind": "decision"}
    )["memory"]["id"]
    fact = ok(harness, alpha, "memory_write", {"content": "CI takes 12 minutes.", "kind": "fact"})[
        "memory"
    ]["id"]
    for memory_id in (decision, fact):
        ok(harness, alpha, "flag_memory", {"memory_id": memory_id, "reason": "check"})

    decisions = ok(harness, alpha, "memory_query", {"flagged": True, "kind": "decision"})
    other_team = ok(harness, beta, "memory_query", {"flagged": True})

    assert [m["id"] for m in decisions["memories"]] == [decision]
    assert other_team["memories"] == []


def test_a_flagged_that_is_not_a_boolean_is_refused_naming_the_field(stores: Harness) -> None:  # noqa: F811
    harness = stores
    result = harness.call(harness.token(), "memory_query", {"flagged": "sometimes"})

    assert result["isError"] is True
    assert "flagged" in str(result)
