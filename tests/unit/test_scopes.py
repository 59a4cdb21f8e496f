"""Scope implication and tool visibility."""

from __future__ import annotations

from shared.auth.principal import KNOWN_SCOPES, Principal, expand_scopes


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
