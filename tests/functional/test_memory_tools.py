"""The memory group through the gateway, on moto: seed 000 shapes, expiry, teams."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import boto3

from shared.config import names
from shared.memory.wiring import build_memory_service
from tests.functional.conftest import Harness


def test_memory_put_returns_the_seed_shape_and_get_finds_it_by_key_and_id(harness: Harness) -> None:
    token = harness.token()
    put = harness.call(
        token, "memory_put", {"key": "prefs", "content": "Prefers tea", "tags": ["p"]}
    )
    memory = put["memory"]
    assert isinstance(memory, dict)
    assert {
        "key",
        "content",
        "tags",
        "metadata",
        "created_at",
        "updated_at",
        "expires_at",
    } <= memory.keys()
    by_key = harness.call(token, "memory_get", {"key": "prefs"})["structuredContent"]
    by_id = harness.call(token, "memory_get", {"id": memory["id"]})["structuredContent"]
    assert by_key == by_id == {"memory": memory}


def test_memory_put_on_an_existing_key_replaces_content_and_keeps_identity(
    harness: Harness,
) -> None:
    token = harness.token()
    first = harness.call(token, "memory_put", {"key": "k", "content": "one"})["memory"]
    second = harness.call(token, "memory_put", {"key": "k", "content": "two"})["memory"]
    assert isinstance(first, dict)
    assert isinstance(second, dict)
    assert second["id"] == first["id"]
    assert second["created_at"] == first["created_at"]
    assert second["content"] == "two"


def test_memory_get_of_an_absent_key_is_null(harness: Harness) -> None:
    result = harness.call(harness.token(), "memory_get", {"key": "missing"})
    assert result["structuredContent"] == {"memory": None}
    assert result["memory"] is None


def test_memory_search_ranks_the_relevant_memory_first(harness: Harness) -> None:
    token = harness.token()
    harness.call(token, "memory_put", {"key": "db", "content": "We chose DynamoDB for claims"})
    harness.call(token, "memory_put", {"key": "ui", "content": "The dashboard uses a dark theme"})
    harness.call(token, "memory_put", {"key": "ci", "content": "CI runs on every push"})
    results = harness.call(token, "memory_search", {"query": "dynamodb claims"})["results"]
    assert isinstance(results, list)
    # The relevant memory first; unrelated ones score below it, or are cut as having no
    # lexical or semantic evidence.
    assert results[0]["key"] == "db"
    assert all(r["score"] < results[0]["score"] for r in results[1:])


def test_expired_memories_are_never_returned_and_are_pruned(harness: Harness, aws: object) -> None:
    token = harness.token()
    # Far enough ahead that a slow put (the model embeds it) cannot outlive it in real time.
    soon = (datetime.now(UTC) + timedelta(seconds=30)).isoformat()
    harness.call(
        token, "memory_put", {"key": "brief", "content": "short lived fact", "expires_at": soon}
    )
    service = build_memory_service()
    # Move the service's clock past the expiry instead of sleeping.
    service.clock = lambda: datetime.now(UTC).timestamp() + 60
    assert harness.call(token, "memory_get", {"key": "brief"})["memory"] is None
    assert harness.call(token, "memory_search", {"query": "short lived"})["results"] == []
    table = boto3.resource("dynamodb").Table(f"cairn-{names.TABLE_MEMORIES}")
    assert table.scan()["Items"] == []


def test_ttl_days_sets_expires_at_and_the_dynamodb_ttl_attribute(harness: Harness) -> None:
    token = harness.token()
    memory = harness.call(token, "memory_put", {"key": "t", "content": "c", "ttl_days": 2})[
        "memory"
    ]
    assert isinstance(memory, dict)
    expires = datetime.fromisoformat(str(memory["expires_at"]))
    assert timedelta(days=1, hours=23) < expires - datetime.now(UTC) <= timedelta(days=2)
    table = boto3.resource("dynamodb").Table(f"cairn-{names.TABLE_MEMORIES}")
    items = table.scan()["Items"]
    assert all(int(item[names.TTL_ATTRIBUTE]) == int(expires.timestamp()) for item in items)


def test_a_team_never_sees_another_teams_memory(harness: Harness) -> None:
    alpha, beta = harness.token("alpha"), harness.token("beta")
    stored = harness.call(
        beta, "memory_put", {"key": "secret-plan", "content": "beta launch plan"}
    )["memory"]
    assert isinstance(stored, dict)
    assert harness.call(alpha, "memory_get", {"key": "secret-plan"})["memory"] is None
    assert harness.call(alpha, "memory_get", {"id": stored["id"]})["memory"] is None
    assert harness.call(alpha, "memory_search", {"query": "launch plan"})["results"] == []


def test_the_author_of_a_memory_is_the_tokens_agent(harness: Harness) -> None:
    token = harness.token(agent_id="agent-7")
    memory = harness.call(token, "memory_put", {"key": "a", "content": "b"})["memory"]
    assert isinstance(memory, dict)
    assert memory["created_by"] == "agent-7"


def test_a_failed_put_writes_nothing(harness: Harness) -> None:
    token = harness.token()
    past = (datetime.now(UTC) - timedelta(days=1)).isoformat()
    result = harness.call(token, "memory_put", {"key": "x", "content": "y", "expires_at": past})
    assert result["isError"] is True
    assert "expires_at" in str(result["content"])
    table = boto3.resource("dynamodb").Table(f"cairn-{names.TABLE_MEMORIES}")
    assert table.scan()["Items"] == []


def test_concurrent_puts_of_one_key_leave_exactly_one_memory(harness: Harness) -> None:
    token = harness.token()

    def put(worker: int) -> None:
        for attempt in range(5):
            harness.call(token, "memory_put", {"key": "shared", "content": f"w{worker} a{attempt}"})

    threads = [threading.Thread(target=put, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    items = boto3.resource("dynamodb").Table(f"cairn-{names.TABLE_MEMORIES}").scan()["Items"]
    records = [i for i in items if str(i["sk"]).startswith("MEMORY#")]
    aliases = [i for i in items if str(i["sk"]).startswith("KEY#")]
    assert len(records) == 1
    assert len(aliases) == 1
    assert aliases[0]["memory_id"] == records[0]["id"]
