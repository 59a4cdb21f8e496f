"""Scope implication, tool visibility and the lexical memory ranking."""

from __future__ import annotations

from datetime import UTC, datetime

from shared.auth.principal import KNOWN_SCOPES, Principal, expand_scopes
from shared.memory.lexical import bm25_rank
from shared.memory.models import Memory


def _principal(*scopes: str, tools: frozenset[str] | None = None) -> Principal:
    return Principal(
        team="t", token_id="tok", token_name="n", scopes=frozenset(scopes), allowed_tools=tools
    )


def test_memory_implies_read_and_write_and_admin_implies_everything() -> None:
    assert expand_scopes({"memory"}) == {"memory", "memory.read", "memory.write"}
    assert expand_scopes({"admin"}) == KNOWN_SCOPES
    assert expand_scopes({"memory.read"}) == {"memory.read"}


def test_a_tool_is_callable_with_any_of_its_scopes_and_within_the_allow_list() -> None:
    assert _principal("memory").may_call("memory_put", ("memory.write",))
    assert not _principal("memory.read").may_call("memory_put", ("memory.write",))
    limited = _principal("admin", tools=frozenset({"memory_get"}))
    assert limited.may_call("memory_get", ("memory.read",))
    assert not limited.may_call("memory_search", ("memory.read",))


def test_the_actor_is_the_bound_agent_else_the_token() -> None:
    assert (
        Principal(
            team="t", token_id="tok_1", token_name="n", scopes=frozenset(), agent_id="a"
        ).actor
        == "a"
    )
    assert _principal().actor == "token:tok"


def _memory(memory_id: str, content: str, key: str | None = None) -> Memory:
    now = datetime.now(UTC)
    return Memory(
        id=memory_id, key=key, content=content, created_at=now, updated_at=now, created_by="x"
    )


def test_bm25_prefers_rare_matching_terms_and_ignores_non_matches() -> None:
    memories = [
        _memory("a", "the cat sat on the mat"),
        _memory("b", "the dog chased the cat around the garden"),
        _memory("c", "quarterly budget planning"),
    ]
    ranked = bm25_rank("dog cat", memories, limit=10)
    assert [memory_id for memory_id, _ in ranked] == ["b", "a"]
    assert ranked[0][1] > ranked[1][1] > 0


def test_bm25_is_deterministic_on_ties_and_respects_the_limit() -> None:
    memories = [_memory(i, "same words here") for i in ("z", "y", "x")]
    assert [m for m, _ in bm25_rank("words", memories, limit=2)] == ["x", "y"]


def test_bm25_matches_keys_and_tags_too() -> None:
    memory = _memory("k", "content without the term", key="deploy-notes")
    assert bm25_rank("deploy", [memory], limit=5)[0][0] == "k"
