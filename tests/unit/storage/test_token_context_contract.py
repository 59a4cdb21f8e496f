"""Allow-list contexts (seed 004) in the TokenStore, on DynamoDB (moto) and SQLite alike, and
how the token service resolves them per request."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from shared.auth.contexts import AGENT_TOOLS, ContextName, ContextRequest, TeamContext
from shared.auth.models import TokenRequest
from shared.auth.ports import TokenStore
from shared.auth.service import TokenService
from shared.auth.wiring import build_token_store
from tests.unit.storage.conftest import Backend

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def store(backend: Backend) -> TokenStore:
    return build_token_store()


def test_a_teams_context_reads_back_and_is_confined_to_the_team(store: TokenStore) -> None:
    own = TeamContext(name="agent", tools=("engram_get", "recall"), updated_at=T0)
    store.put_context("alpha", own)

    assert store.get_context("alpha", "agent") == own
    assert store.get_context("beta", "agent") is None
    assert store.get_context("alpha", "crossroads") is None


def test_none_means_every_tool_and_an_empty_tuple_none(store: TokenStore) -> None:
    store.put_context("alpha", TeamContext(name="crossroads", tools=None, updated_at=T0))
    store.put_context("alpha", TeamContext(name="agent", tools=(), updated_at=T0))

    crossroads = store.get_context("alpha", "crossroads")
    agent = store.get_context("alpha", "agent")
    assert crossroads is not None
    assert agent is not None
    assert (crossroads.tools, agent.tools) == (None, ())


def test_a_put_replaces_and_a_delete_returns_to_the_preset(store: TokenStore) -> None:
    store.put_context("alpha", TeamContext(name="agent", tools=("a",), updated_at=T0))
    store.put_context("alpha", TeamContext(name="agent", tools=("b",), updated_at=T0))
    replaced = store.get_context("alpha", "agent")
    assert replaced is not None
    assert replaced.tools == ("b",)

    assert store.delete_context("alpha", "agent") is True
    assert store.delete_context("alpha", "agent") is False
    assert store.get_context("alpha", "agent") is None


def test_a_context_is_never_listed_as_a_token(store: TokenStore) -> None:
    service = TokenService(store, b"pepper")
    service.issue(TokenRequest(team="alpha", name="t", scopes=("memory",), context="agent"))
    store.put_context("alpha", TeamContext(name="agent", tools=("x",), updated_at=T0))
    assert [r.name for r in store.list_team("alpha")] == ["t"]


def test_a_context_tokens_allow_list_follows_its_team_at_every_request(
    store: TokenStore,
) -> None:
    service = TokenService(store, b"pepper")

    def secret(team: str, name: str, scope: str, context: ContextName) -> str:
        request = TokenRequest(team=team, name=name, scopes=(scope,), context=context)
        return service.issue(request).secret

    agent = secret("alpha", "a", "memory", "agent")
    other = secret("beta", "b", "memory", "agent")
    crossroads = secret("alpha", "c", "admin", "crossroads")
    internal = secret("alpha", "i", "admin", "internal")

    preset = service.authenticate(agent)[0]
    service.set_context(ContextRequest(team="alpha", name="agent", tools=("recall",)))
    changed = service.authenticate(agent)[0]
    untouched = service.authenticate(other)[0]
    service.reset_context("alpha", "agent")

    assert preset.allowed_tools == frozenset(AGENT_TOOLS)
    assert preset.context == "agent"
    assert changed.allowed_tools == frozenset({"recall"})
    assert untouched.allowed_tools == frozenset(AGENT_TOOLS)
    assert service.authenticate(agent)[0].allowed_tools == frozenset(AGENT_TOOLS)
    assert service.authenticate(crossroads)[0].allowed_tools == frozenset()
    assert service.authenticate(internal)[0].allowed_tools is None
    views = {v.name: v for v in service.contexts("alpha")}
    assert (views["agent"].source, views["crossroads"].tools) == ("preset", [])


def test_a_token_request_takes_a_context_or_tools_not_both() -> None:
    with pytest.raises(ValueError, match="either `context`"):
        TokenRequest(
            team="alpha", name="t", scopes=("memory",), context="agent", allowed_tools=("x",)
        )
    with pytest.raises(ValueError, match="context"):
        TokenRequest.model_validate(
            {"team": "alpha", "name": "t", "scopes": ["memory"], "context": "everything"}
        )
