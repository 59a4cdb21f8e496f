"""Seed 004's engram and profile tools on moto: one memory record, keyed per wallet."""

from __future__ import annotations

import json
from typing import Any

from tests.functional.conftest import Harness

WALLET = "0x1234abcd"


def _create(harness: Harness, token: str, **overrides: Any) -> dict[str, Any]:
    arguments = {
        "wallet_address": WALLET,
        "engram_type": "preference",
        "key": "trading.risk_tolerance",
        "content": json.dumps({"level": "medium", "max_position": 0.1}),
        "tags": ["trading", "risk"],
        **overrides,
    }
    result = harness.call(token, "engram_create", arguments)
    assert result["isError"] is False, result
    engram: dict[str, Any] = result["engram"]
    return engram


def test_an_engram_is_created_and_fetched_by_wallet_and_key(harness: Harness) -> None:
    token = harness.token(team="alpha", agent_id="hecate")

    created = _create(harness, token)
    fetched = harness.call(
        token, "engram_get", {"wallet_address": WALLET, "key": "trading.risk_tolerance"}
    )

    assert fetched["engram"] == created
    assert created["engram_type"] == "preference"
    assert created["is_public"] is False
    assert created["created_by"] == "hecate"
    assert json.loads(created["content"]) == {"level": "medium", "max_position": 0.1}


def test_the_same_key_under_two_wallets_is_two_engrams_and_a_repeat_is_409(
    harness: Harness,
) -> None:
    token = harness.token(team="alpha")
    first = _create(harness, token)
    other = _create(harness, token, wallet_address="0xbeef")

    again = harness.call(
        token,
        "engram_create",
        {
            "wallet_address": WALLET,
            "engram_type": "preference",
            "key": "trading.risk_tolerance",
            "content": "{}",
        },
    )

    assert first["id"] != other["id"]
    assert again["isError"] is True
    assert again["error"]["status"] == 409
    assert again["error"]["holder"] == {"id": first["id"]}


def test_engram_keys_do_not_collide_with_memory_put_keys(harness: Harness) -> None:
    token = harness.token(team="alpha")
    harness.call(token, "memory_put", {"key": "trading.risk_tolerance", "content": "plain"})
    engram = _create(harness, token)

    plain = harness.call(token, "memory_get", {"key": "trading.risk_tolerance"})["memory"]

    assert plain["content"] == "plain"
    assert plain["id"] != engram["id"]


def test_content_must_be_json_naming_the_field_and_nothing_is_written(harness: Harness) -> None:
    token = harness.token(team="alpha")

    result = harness.call(
        token,
        "engram_create",
        {"wallet_address": WALLET, "engram_type": "knowledge", "key": "k", "content": "not json"},
    )

    assert result["isError"] is True
    assert result["error"]["field"] == "content"
    fetched = harness.call(token, "engram_get", {"wallet_address": WALLET, "key": "k"})
    assert fetched["engram"] is None


def test_an_unknown_engram_type_is_refused_naming_the_field(harness: Harness) -> None:
    result = harness.call(
        harness.token(),
        "engram_create",
        {"wallet_address": WALLET, "engram_type": "gossip", "key": "k", "content": "{}"},
    )

    assert result["isError"] is True
    assert result["error"]["field"] == "engram_type"


def test_update_replaces_content_and_tags_and_delete_removes_it(harness: Harness) -> None:
    token = harness.token(team="alpha")
    engram = _create(harness, token)

    updated = harness.call(
        token,
        "engram_update",
        {"id": engram["id"], "content": '{"level": "high"}', "tags": ["updated"]},
    )["engram"]
    kept_tags = harness.call(token, "engram_update", {"id": engram["id"], "content": "{}"})[
        "engram"
    ]
    deleted = harness.call(token, "engram_delete", {"id": engram["id"]})
    gone = harness.call(token, "engram_get", {"wallet_address": WALLET, "key": engram["key"]})
    again = harness.call(token, "engram_delete", {"id": engram["id"]})

    assert updated["content"] == '{"level": "high"}'
    assert updated["tags"] == ["updated"]
    assert kept_tags["tags"] == ["updated"]
    assert deleted["deleted"] is True
    assert gone["engram"] is None
    assert again["error"]["status"] == 404


def test_update_of_a_plain_memory_id_is_a_404(harness: Harness) -> None:
    token = harness.token(team="alpha")
    memory = harness.call(token, "memory_put", {"key": "k", "content": "c"})["memory"]

    result = harness.call(token, "engram_update", {"id": memory["id"], "content": "{}"})

    assert result["error"]["code"] == "not_found"
    assert result["error"]["field"] == "id"


def test_search_and_list_by_type_filter_and_page(harness: Harness) -> None:
    token = harness.token(team="alpha")
    for n in range(5):
        _create(harness, token, key=f"strategy.{n}", engram_type="strategy", tags=[f"t{n % 2}"])
    _create(harness, token, key="pref", engram_type="preference", tags=["t0"])
    _create(harness, token, key="strategy.x", engram_type="strategy", wallet_address="0xother")

    page = harness.call(
        token,
        "engram_list_by_type",
        {"wallet_address": WALLET, "engram_type": "strategy", "limit": 2},
    )
    rest = harness.call(
        token,
        "engram_list_by_type",
        {"wallet_address": WALLET, "engram_type": "strategy", "limit": 10, "offset": 2},
    )
    tagged = harness.call(token, "engram_search", {"tags": ["t0"]})["engrams"]
    by_wallet = harness.call(token, "engram_search", {"wallet_address": "0xother"})["engrams"]

    assert page["total"] == 5
    assert len(page["engrams"]) == 2
    assert page["next_offset"] == 2
    assert rest["next_offset"] is None
    keys = [e["key"] for e in page["engrams"] + rest["engrams"]]
    assert sorted(keys) == [f"strategy.{n}" for n in range(5)]
    assert {e["key"] for e in tagged} == {"strategy.0", "strategy.2", "strategy.4", "pref"}
    assert [e["key"] for e in by_wallet] == ["strategy.x"]


def test_user_profile_update_writes_persona_fields_that_profile_get_parses(
    harness: Harness,
) -> None:
    token = harness.token(team="alpha")

    harness.call(
        token,
        "user_profile_update",
        {"wallet_address": WALLET, "field": "base", "content": '{"name": "Ada"}'},
    )
    second = harness.call(
        token,
        "user_profile_update",
        {"wallet_address": WALLET, "field": "base", "content": '{"name": "Ada L."}'},
    )["engram"]
    harness.call(
        token,
        "user_profile_update",
        {"wallet_address": WALLET, "field": "chains", "content": '["eth", "sol"]'},
    )
    profile = harness.call(token, "user_profile_get", {"wallet_address": WALLET})

    assert second["key"] == "user.profile.base"
    assert second["engram_type"] == "persona"
    assert profile["profile"] == {"base": {"name": "Ada L."}, "chains": ["eth", "sol"]}
    assert [e["key"] for e in profile["engrams"]] == [
        "user.profile.base",
        "user.profile.chains",
    ]


def test_another_team_sees_none_of_a_wallets_engrams(harness: Harness) -> None:
    alpha = harness.token(team="alpha")
    beta = harness.token(team="beta")
    engram = _create(harness, alpha)

    assert (
        harness.call(beta, "engram_get", {"wallet_address": WALLET, "key": engram["key"]})["engram"]
        is None
    )
    assert harness.call(beta, "engram_search", {})["engrams"] == []
    assert harness.call(beta, "engram_delete", {"id": engram["id"]})["isError"] is True
    assert (
        harness.call(alpha, "engram_get", {"wallet_address": WALLET, "key": engram["key"]})[
            "engram"
        ]
        is not None
    )


def test_engrams_are_found_by_memory_search_like_any_memory(harness: Harness) -> None:
    token = harness.token(team="alpha")
    engram = _create(harness, token, content=json.dumps({"favourite_chain": "solana"}))

    hits = harness.call(token, "memory_search", {"query": "favourite chain solana"})["results"]

    assert hits[0]["id"] == engram["id"]


def test_engram_delete_is_annotated_not_idempotent_because_a_repeat_is_a_404(
    harness: Harness,
) -> None:
    token = harness.token(team="alpha", scopes=("memory",))  # its tools fit one page
    engram = _create(harness, token)
    listed = harness.post({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, token).body
    assert listed is not None
    (tool,) = [t for t in listed["result"]["tools"] if t["name"] == "engram_delete"]

    first = harness.call(token, "engram_delete", {"id": engram["id"]})
    second = harness.call(token, "engram_delete", {"id": engram["id"]})

    assert first["isError"] is False
    assert second["isError"] is True
    assert second["structuredContent"]["error"]["status"] == 404
    assert tool["annotations"]["idempotentHint"] is False
    assert tool["annotations"]["destructiveHint"] is True
