"""Seed 002's remember / recall / flag_memory on moto, curated inline (the local default)."""

from __future__ import annotations

from typing import Any

import boto3

from shared.config import names
from shared.config.settings import Settings
from tests.functional.conftest import Harness


def _remember(harness: Harness, token: str, title: str, body: str, **extra: Any) -> str:
    result = harness.call(token, "remember", {"title": title, "body": body, **extra})
    assert result["isError"] is False, result
    assert result["status"] == "accepted"
    memory_id: str = result["memory_id"]
    return memory_id


def _recall(harness: Harness, token: str, **arguments: Any) -> list[dict[str, Any]]:
    result = harness.call(token, "recall", arguments)
    assert result["isError"] is False, result
    memories: list[dict[str, Any]] = result["memories"]
    return memories


def _records(settings: Settings) -> list[dict[str, Any]]:
    table = boto3.resource("dynamodb").Table(settings.table(names.TABLE_MEMORIES))
    return [i for i in table.scan()["Items"] if str(i["sk"]).startswith("MEMORY#")]


def test_a_remembered_fact_is_recalled_by_free_text(harness: Harness) -> None:
    token = harness.token(team="alpha", agent_id="agent-a")
    _remember(
        harness,
        token,
        "Deploy freeze",
        "Deploys are frozen from Friday 17:00 UTC.",
        tags=["release"],
        applies_to=["repo:web"],
        confidence="high",
    )
    _remember(harness, token, "Coffee", "The team prefers oat milk in the coffee machine.")

    recalled = _recall(harness, token, query="when are deploys frozen?")

    assert recalled[0]["title"] == "Deploy freeze"
    assert recalled[0]["body"] == "Deploys are frozen from Friday 17:00 UTC."
    assert recalled[0]["tags"] == ["release"]
    assert recalled[0]["applies_to"] == ["repo:web"]
    assert recalled[0]["confidence"] == "high"
    assert "id" not in recalled[0]


def test_include_ids_prefixes_each_result_with_its_memory_id(harness: Harness) -> None:
    token = harness.token(team="alpha")
    memory_id = _remember(harness, token, "Style", "Answer in short paragraphs.")

    result = harness.call(token, "recall", {"query": "style", "include_ids": True})

    assert result["memories"][0]["id"] == memory_id
    assert result["text"] == f"[{memory_id}] Style: Answer in short paragraphs."


def test_tags_narrow_recall_to_memories_carrying_any_of_them(harness: Harness) -> None:
    token = harness.token(team="alpha")
    _remember(harness, token, "Deploy window", "Deploy on Tuesdays.", tags=["release"])
    _remember(harness, token, "Deploy owner", "Ops owns deploys.", tags=["people"])
    _remember(harness, token, "Deploy tooling", "Deploys use Argo CD.", tags=["tools"])

    titles = {
        m["title"] for m in _recall(harness, token, query="deploy", tags=["release", "tools"])
    }

    assert titles == {"Deploy window", "Deploy tooling"}


def test_recall_without_a_query_lists_the_newest_memories(harness: Harness) -> None:
    token = harness.token(team="alpha")
    for n in range(3):
        _remember(harness, token, f"Fact {n}", f"Distinct fact number {n} about topic {n * 7}.")

    titles = [m["title"] for m in _recall(harness, token, limit=2)]

    assert titles == ["Fact 2", "Fact 1"]


def test_the_curator_merges_a_duplicate_into_the_existing_memory(
    harness: Harness, aws: Settings
) -> None:
    token = harness.token(team="alpha")
    first = _remember(
        harness, token, "Deploy freeze", "The deploy freeze starts Friday.", tags=["release"]
    )

    second = _remember(
        harness,
        token,
        "Deploy freeze",
        "The deploy  freeze starts friday.",
        tags=["calendar"],
        applies_to=["repo:web"],
    )

    records = _records(aws)
    assert [r["id"] for r in records] == [first]
    assert records[0]["merged_from"] == [second]
    assert records[0]["tags"] == ["release", "calendar"]
    assert records[0]["applies_to"] == ["repo:web"]
    assert harness.call(token, "memory_get", {"id": second})["memory"] is None
    assert len(_recall(harness, token, query="deploy freeze")) == 1


def test_the_curator_never_merges_facts_that_differ_in_an_identifier_or_a_number(
    harness: Harness, aws: Settings
) -> None:
    # MiniLM puts these pairs at cosine 0.965 and 0.981: by cosine alone the curator merged
    # the second of each into the first and deleted it, losing a fact.
    token = harness.token(team="alpha")
    pairs = [
        ("quokkae67f8c5e91 fact", "The quokkae67f8c5e91 service runs on ARM."),
        ("quokka688cf91689 fact", "The quokka688cf91689 service runs on ARM."),
        ("Sprint", "The sprint length is two weeks."),
        ("Sprint", "The sprint length is three weeks."),
    ]
    ids = [_remember(harness, token, title, body) for title, body in pairs]

    assert sorted(r["id"] for r in _records(aws)) == sorted(ids)
    recalled = _recall(harness, token, query="quokka688cf91689")
    assert recalled[0]["body"] == "The quokka688cf91689 service runs on ARM."


def test_the_curator_files_a_new_fact_and_links_it_to_related_ones(
    harness: Harness, aws: Settings
) -> None:
    token = harness.token(team="alpha")
    style = _remember(harness, token, "Style", "User prefers concise answers.")
    _remember(harness, token, "Coffee", "The team prefers oat milk in the coffee machine.")

    related = _remember(harness, token, "Answer style", "The user likes short, concise responses.")

    record = next(r for r in _records(aws) if r["id"] == related)
    assert record.get("status", "filed") == "filed"  # pending is cleared once filed
    assert record["links"] == [style]
    memory = harness.call(token, "memory_get", {"id": related})["memory"]
    assert memory["links"] == [style]


def test_a_flagged_memory_ranks_below_unflagged_matches_and_is_never_edited(
    harness: Harness,
) -> None:
    token = harness.token(team="alpha", agent_id="reviewer-bot")
    wrong = _remember(harness, token, "Deploy day", "Deploys happen on Fridays.")
    right = _remember(harness, token, "Deploy schedule", "Deploys happen on Tuesdays and Fridays.")
    assert (
        _recall(harness, token, query="deploys happen on fridays", include_ids=True)[0]["id"]
        == wrong
    )

    flagged = harness.call(token, "flag_memory", {"memory_id": wrong, "reason": "moved to Tuesday"})

    assert flagged == {
        **flagged,
        "isError": False,
        "memory_id": wrong,
        "flagged": True,
        "flag_count": 1,
    }
    recalled = _recall(harness, token, query="deploys happen on fridays", include_ids=True)
    assert [m["id"] for m in recalled] == [right, wrong]
    assert recalled[1]["flagged"] is True
    memory = harness.call(token, "memory_get", {"id": wrong})["memory"]
    assert memory["content"] == "Deploys happen on Fridays."
    assert memory["flags"][0]["agent_id"] == "reviewer-bot"
    assert memory["flags"][0]["reason"] == "moved to Tuesday"


def test_flagging_an_unknown_or_foreign_memory_is_a_404_naming_memory_id(harness: Harness) -> None:
    alpha = harness.token(team="alpha")
    beta = harness.token(team="beta")
    memory_id = _remember(harness, alpha, "Secret", "Alpha's launch date is in March.")

    for token, target in ((alpha, "mem_nope"), (beta, memory_id)):
        result = harness.call(token, "flag_memory", {"memory_id": target, "reason": "wrong"})
        assert result["isError"] is True
        assert result["error"]["field"] == "memory_id"
        assert result["error"]["status"] == 404


def test_another_team_never_recalls_a_memory(harness: Harness) -> None:
    alpha = harness.token(team="alpha")
    beta = harness.token(team="beta")
    _remember(harness, alpha, "Launch", "Alpha launches in March.")

    assert _recall(harness, beta, query="launch march") == []
    assert _recall(harness, beta) == []


def test_remember_refuses_an_agent_id_and_ignores_is_global(
    harness: Harness, aws: Settings
) -> None:
    token = harness.token(team="alpha", agent_id="agent-a")

    refused = harness.call(token, "remember", {"title": "t", "body": "b", "agent_id": "mallory"})
    accepted = harness.call(
        token, "remember", {"title": "t", "body": "b", "is_global": True, "requires_approval": True}
    )

    assert refused["isError"] is True
    assert refused["error"]["field"] == "agent_id"
    assert accepted["isError"] is False
    (record,) = _records(aws)
    assert record["created_by"] == "agent-a"
    assert "is_global" not in record


def test_memories_from_both_surfaces_are_one_record(harness: Harness) -> None:
    token = harness.token(team="alpha")
    harness.call(
        token, "memory_put", {"key": "db", "content": "The primary database is Postgres 16."}
    )
    remembered = _remember(harness, token, "Cache", "Redis 7 backs the session cache.")

    assert _recall(harness, token, query="primary database postgres")[0]["title"] == "db"
    hits = harness.call(token, "memory_search", {"query": "session cache redis"})["results"]
    assert hits[0]["id"] == remembered


def test_a_repeated_flag_with_the_same_reason_from_the_same_caller_counts_once(
    harness: Harness,
) -> None:
    token = harness.token(team="alpha", agent_id="reviewer-bot")
    other = harness.token(team="alpha", agent_id="second-bot")
    wrong = _remember(harness, token, "Deploy day", "Deploys happen on Fridays.")
    counts = [
        harness.call(caller, "flag_memory", {"memory_id": wrong, "reason": reason})["flag_count"]
        for caller, reason in [
            (token, "moved to Tuesday"),
            (token, "moved to Tuesday"),
            (token, "  Moved to  tuesday "),
            (token, "the freeze moved too"),
            (other, "moved to Tuesday"),
        ]
    ]
    assert counts == [1, 1, 1, 2, 3]
    memory = harness.call(token, "memory_get", {"id": wrong})["memory"]
    assert memory["content"] == "Deploys happen on Fridays."
