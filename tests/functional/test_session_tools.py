"""Seed 004's persona tools (hecate_* / moros_*) and the two cairn adds, through the gateway,
on both stores: DynamoDB (moto) and the embedded SQLite database."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shared import runtime
from shared.app.groups import load_groups
from shared.config.settings import Settings
from tests.functional.conftest import PEPPER, Harness, on_storage
from tests.jsonrpc import tools_call

WALLET = "0xa11ce"
OTHER_WALLET = "0xb0b"


@pytest.fixture(params=["dynamodb", "sqlite"])
def gateway(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Harness]:
    """The gateway in-process on the store named by the parameter."""
    settings = Settings(
        environment="test", token_pepper=PEPPER, data_dir=tmp_path, storage=request.param
    )
    with on_storage(settings):
        yield Harness.over(settings)


def ok(result: dict[str, Any]) -> dict[str, Any]:
    assert result["isError"] is False, result
    return result


def new_session(h: Harness, token: str, wallet: str = WALLET) -> str:
    session_id: str = ok(h.call(token, "hecate_new_session", {"wallet_address": wallet}))[
        "session"
    ]["id"]
    return session_id


def say(
    h: Harness,
    token: str,
    text: str,
    *,
    session_id: str | None = None,
    persona: str = "hecate",
    wallet: str = WALLET,
) -> dict[str, Any]:
    arguments: dict[str, Any] = {
        "wallet_address": wallet,
        "persona": persona,
        "messages": [{"role": "user", "content": text}, {"role": "assistant", "content": "ok"}],
    }
    if session_id is not None:
        arguments["session_id"] = session_id
    return ok(h.call(token, "session_append_messages", arguments))


def listed(h: Harness, token: str, wallet: str = WALLET, **extra: Any) -> list[str]:
    result = ok(h.call(token, "hecate_list_sessions", {"wallet_address": wallet, **extra}))
    return [s["id"] for s in result["sessions"]]


# --------------------------------------------------------------------------- sessions


def test_a_new_session_records_messages_and_resumes_with_its_history(gateway: Harness) -> None:
    token = gateway.token(agent_id="hecate-harness")
    session_id = new_session(gateway, token)

    say(gateway, token, "I mostly trade on Base", session_id=session_id)
    resumed = ok(
        gateway.call(
            token, "hecate_resume_session", {"wallet_address": WALLET, "session_id": session_id}
        )
    )

    assert [(m["seq"], m["role"], m["content"]) for m in resumed["messages"]] == [
        (1, "user", "I mostly trade on Base"),
        (2, "assistant", "ok"),
    ]
    assert resumed["session"]["title"] == "I mostly trade on Base"
    assert resumed["session"]["message_count"] == 2
    assert resumed["model"] is None


def test_sessions_list_most_recently_updated_first_with_a_limit(gateway: Harness) -> None:
    token = gateway.token()
    ids = [new_session(gateway, token) for _ in range(4)]
    say(gateway, token, "back to the first", session_id=ids[0])

    assert listed(gateway, token) == [ids[0], ids[3], ids[2], ids[1]]
    assert listed(gateway, token, limit=2) == [ids[0], ids[3]]
    ok(
        gateway.call(
            token, "hecate_resume_session", {"wallet_address": WALLET, "session_id": ids[1]}
        )
    )
    assert listed(gateway, token)[0] == ids[1]


def test_appending_without_a_session_id_starts_a_session(gateway: Harness) -> None:
    token = gateway.token()
    started = say(gateway, token, "hello from moros", persona="moros")["session"]

    assert started["persona"] == "moros"
    assert started["message_count"] == 2
    assert listed(gateway, token) == []  # a Moros session is not Hecate's


def test_delete_refuses_a_pinned_session_naming_it_and_deletes_it_once_unpinned(
    gateway: Harness,
) -> None:
    token = gateway.token()
    session_id = say(gateway, token, "keep this one")["session"]["id"]
    pin = {"wallet_address": WALLET, "persona": "hecate", "session_id": session_id}
    assert ok(gateway.call(token, "session_pin", pin))["session"]["pinned"] is True
    delete = {"wallet_address": WALLET, "session_id": session_id}

    refused = gateway.call(token, "hecate_delete_session", delete)
    ok(gateway.call(token, "session_pin", {**pin, "pinned": False}))
    deleted = ok(gateway.call(token, "hecate_delete_session", delete))
    again = gateway.call(token, "hecate_delete_session", delete)

    assert refused["isError"] is True
    assert refused["error"]["status"] == 409
    assert refused["error"]["field"] == "session_id"
    assert session_id in refused["error"]["message"]
    assert "pinned" in refused["error"]["message"]
    assert deleted == {**deleted, "session_id": session_id, "deleted": True}
    assert again["error"]["status"] == 404
    assert listed(gateway, token) == []


def test_sessions_are_confined_to_their_wallet_persona_and_team(gateway: Harness) -> None:
    alpha = gateway.token(team="alpha")
    beta = gateway.token(team="beta")
    session_id = say(gateway, alpha, "secret plans")["session"]["id"]
    moros_id = say(gateway, alpha, "moros only", persona="moros")["session"]["id"]

    other_wallet = gateway.call(
        alpha, "hecate_resume_session", {"wallet_address": OTHER_WALLET, "session_id": session_id}
    )
    other_team = gateway.call(
        beta, "hecate_resume_session", {"wallet_address": WALLET, "session_id": session_id}
    )
    other_persona = gateway.call(
        alpha, "hecate_resume_session", {"wallet_address": WALLET, "session_id": moros_id}
    )
    beta_delete = gateway.call(
        beta, "hecate_delete_session", {"wallet_address": WALLET, "session_id": session_id}
    )
    beta_append = gateway.call(
        beta,
        "session_append_messages",
        {
            "wallet_address": WALLET,
            "persona": "hecate",
            "session_id": session_id,
            "messages": [{"role": "user", "content": "injected"}],
        },
    )

    for refused in (other_wallet, other_team, other_persona, beta_delete, beta_append):
        assert refused["isError"] is True
        assert refused["error"]["status"] == 404
        assert refused["error"]["field"] == "session_id"
    assert listed(gateway, beta) == []
    assert listed(gateway, alpha, wallet=OTHER_WALLET) == []
    kept = ok(
        gateway.call(
            alpha, "hecate_resume_session", {"wallet_address": WALLET, "session_id": session_id}
        )
    )
    assert [m["content"] for m in kept["messages"]] == ["secret plans", "ok"]


def test_bad_arguments_name_the_field_and_write_nothing(gateway: Harness) -> None:
    token = gateway.token()
    no_messages = gateway.call(
        token,
        "session_append_messages",
        {"wallet_address": WALLET, "persona": "hecate", "messages": []},
    )
    bad_role = gateway.call(
        token,
        "session_append_messages",
        {
            "wallet_address": WALLET,
            "persona": "hecate",
            "messages": [{"role": "wizard", "content": "x"}],
        },
    )
    bad_limit = gateway.call(token, "hecate_list_sessions", {"wallet_address": WALLET, "limit": 0})
    append = {"wallet_address": WALLET, "persona": "hecate"}
    too_many = gateway.call(
        token,
        "session_append_messages",
        {**append, "messages": [{"role": "user", "content": "x"}] * 51},
    )
    too_long = gateway.call(
        token,
        "session_append_messages",
        {**append, "messages": [{"role": "user", "content": "x" * 50_001}]},
    )
    too_much = gateway.call(
        token,
        "session_append_messages",
        {**append, "messages": [{"role": "user", "content": "x" * 40_001}] * 5},
    )
    bad_id = gateway.call(
        token, "hecate_resume_session", {"wallet_address": WALLET, "session_id": "../x"}
    )

    assert no_messages["error"]["field"] == "messages"
    assert bad_role["error"]["field"].startswith("messages")
    assert bad_limit["error"]["field"] == "limit"
    for refused in (too_many, too_long, too_much):
        assert refused["isError"] is True
        assert refused["error"]["field"].startswith("messages")
    assert "200000" in too_much["error"]["message"]
    assert bad_id["error"]["field"] == "session_id"
    assert listed(gateway, token) == []


def test_session_tools_need_the_sessions_scope(gateway: Harness) -> None:
    memory_only = gateway.token(scopes=("memory",))
    reply = gateway.post(
        tools_call("hecate_new_session", {"wallet_address": WALLET}),
        memory_only,
    )
    assert reply.status == 403
    assert reply.body is not None
    assert reply.body["error"]["code"] == -32002


# --------------------------------------------------------------------------- memory


def test_remember_is_an_idempotent_write_of_the_engram_that_engram_get_reads(
    gateway: Harness,
) -> None:
    token = gateway.token(agent_id="hecate")
    arguments = {
        "wallet_address": WALLET,
        "key": "visitor.preference.chains",
        "content": "prefers Base and Solana",
        "engram_type": "preference",
    }

    first = ok(gateway.call(token, "hecate_remember", arguments))
    again = ok(gateway.call(token, "hecate_remember", arguments))
    changed = ok(gateway.call(token, "moros_remember", {**arguments, "content": "only Base now"}))
    fetched = ok(
        gateway.call(
            token, "engram_get", {"wallet_address": WALLET, "key": "visitor.preference.chains"}
        )
    )["engram"]
    listed_engrams = ok(
        gateway.call(
            token,
            "engram_list_by_type",
            {"wallet_address": WALLET, "engram_type": "preference"},
        )
    )

    assert (first["created"], again["created"], changed["created"]) == (True, False, False)
    assert first["engram"]["id"] == again["engram"]["id"] == changed["engram"]["id"]
    assert fetched["id"] == first["engram"]["id"]
    assert json.loads(fetched["content"]) == "only Base now"
    assert fetched["engram_type"] == "preference"
    assert fetched["created_by"] == "hecate"
    assert listed_engrams["total"] == 1


def test_remembered_engrams_are_what_recall_reads(gateway: Harness) -> None:
    token = gateway.token()
    ok(
        gateway.call(
            token,
            "moros_remember",
            {"wallet_address": WALLET, "key": "visitor.goal", "content": '{"goal": "yield"}'},
        )
    )
    recalled = ok(gateway.call(token, "recall", {"limit": 5}))
    assert any("yield" in m["body"] for m in recalled["memories"])


def test_remember_refuses_another_type_under_an_existing_key(gateway: Harness) -> None:
    token = gateway.token()
    arguments = {"wallet_address": WALLET, "key": "visitor.name", "content": "Ada"}
    ok(gateway.call(token, "hecate_remember", {**arguments, "engram_type": "persona"}))
    refused = gateway.call(token, "hecate_remember", {**arguments, "engram_type": "knowledge"})
    assert refused["isError"] is True
    assert refused["error"]["field"] == "engram_type"
    assert "persona" in refused["error"]["message"]


def test_a_pinned_engram_survives_engram_delete_and_cleanup_until_unpinned(
    gateway: Harness,
) -> None:
    token = gateway.token()
    engram = ok(
        gateway.call(
            token,
            "hecate_remember",
            {"wallet_address": WALLET, "key": "visitor.vip", "content": "true"},
        )
    )["engram"]
    pinned = ok(gateway.call(token, "hecate_pin_engram", {"id": engram["id"]}))
    ok(gateway.call(token, "moros_pin_engram", {"id": engram["id"]}))  # idempotent

    refused = gateway.call(token, "engram_delete", {"id": engram["id"]})
    for _ in range(7):
        say(gateway, token, "filler")
    ok(gateway.call(token, "hecate_cleanup", {"wallet_address": WALLET}))
    ok(gateway.call(token, "moros_cleanup", {"wallet_address": WALLET}))
    survived = gateway.call(token, "engram_get", {"wallet_address": WALLET, "key": "visitor.vip"})
    unpinned = ok(gateway.call(token, "moros_unpin_engram", {"id": engram["id"]}))
    ok(gateway.call(token, "hecate_pin_engram", {"id": engram["id"]}))
    ok(gateway.call(token, "hecate_unpin_engram", {"id": engram["id"]}))
    deleted = ok(gateway.call(token, "engram_delete", {"id": engram["id"]}))

    assert pinned["engram"]["pinned"] is True
    assert refused["isError"] is True
    assert refused["error"]["status"] == 409
    assert refused["error"]["field"] == "id"
    assert engram["id"] in refused["error"]["message"]
    assert "pinned" in refused["error"]["message"]
    assert survived["engram"]["id"] == engram["id"]
    assert survived["engram"]["pinned"] is True
    assert unpinned["engram"]["pinned"] is False
    assert deleted["deleted"] is True


def test_pinning_an_unknown_or_foreign_engram_is_a_404_naming_id(gateway: Harness) -> None:
    alpha = gateway.token(team="alpha")
    beta = gateway.token(team="beta")
    engram = ok(
        gateway.call(
            alpha, "hecate_remember", {"wallet_address": WALLET, "key": "k", "content": "v"}
        )
    )["engram"]
    for refused in (
        gateway.call(beta, "hecate_pin_engram", {"id": engram["id"]}),
        gateway.call(alpha, "moros_pin_engram", {"id": "mem_nope"}),
    ):
        assert refused["isError"] is True
        assert (refused["error"]["status"], refused["error"]["field"]) == (404, "id")


# --------------------------------------------------------------------------- cleanup


def test_cleanup_keeps_the_five_most_recent_and_the_pinned_and_summarises_the_rest(
    gateway: Harness,
) -> None:
    token = gateway.token()
    ids = [say(gateway, token, f"message number {n}")["session"]["id"] for n in range(9)]
    pin = {"wallet_address": WALLET, "persona": "hecate", "session_id": ids[1]}
    ok(gateway.call(token, "session_pin", pin))
    moros_id = say(gateway, token, "moros is separate", persona="moros")["session"]["id"]

    done = ok(gateway.call(token, "hecate_cleanup", {"wallet_address": WALLET}))
    nothing_left = ok(gateway.call(token, "hecate_cleanup", {"wallet_address": WALLET}))

    compacted = {s["id"] for s in done["compacted"]}
    assert compacted == {ids[0], ids[2], ids[3]}
    assert set(listed(gateway, token)) == {*ids[4:], ids[1]}
    assert done["kept"] == 6
    assert (nothing_left["compacted"], nothing_left["summary_engram_id"]) == ([], None)
    summary = ok(
        gateway.call(token, "engram_get", {"wallet_address": WALLET, "key": done["summary_key"]})
    )["engram"]
    assert summary["id"] == done["summary_engram_id"]
    assert summary["engram_type"] == "knowledge"
    content = json.loads(summary["content"])
    assert {s["id"] for s in content["sessions"]} == compacted
    said = [text for s in content["sessions"] for text in s["user_said"]]
    assert sorted(said) == ["message number 0", "message number 2", "message number 3"]
    moros = ok(gateway.call(token, "moros_cleanup", {"wallet_address": WALLET}))
    assert moros["compacted"] == []
    resumed = gateway.call(
        token, "hecate_resume_session", {"wallet_address": WALLET, "session_id": ids[0]}
    )
    assert resumed["error"]["status"] == 404
    assert moros_id not in compacted


def test_a_cleanup_working_from_a_stale_listing_compacts_nothing_twice(
    gateway: Harness,
) -> None:
    """Cleanup A lists, then cleanup B runs to the end, then A goes on: A finds every old
    session gone, writes no second summary and reports nothing compacted."""
    token = gateway.token()
    for n in range(8):
        say(gateway, token, f"turn {n}")
    service = load_groups()["sessions"].build_service()
    store = service._store
    original = store.list_owner
    results: list[dict[str, Any]] = []
    b_started = threading.Event()

    def list_then_let_b_run(*args: Any, **kwargs: Any) -> Any:
        page = original(*args, **kwargs)
        if not b_started.is_set():  # only A's listing: B runs inside it, to the end
            b_started.set()
            results.append(ok(gateway.call(token, "hecate_cleanup", {"wallet_address": WALLET})))
        return page

    store.list_owner = list_then_let_b_run
    try:
        a = ok(gateway.call(token, "hecate_cleanup", {"wallet_address": WALLET}))
    finally:
        store.list_owner = original

    b = results[0]
    assert len(b["compacted"]) == 3
    assert (a["compacted"], a["summary_engram_id"]) == ([], None)
    summaries = ok(
        gateway.call(
            token,
            "engram_search",
            {"wallet_address": WALLET, "engram_type": "knowledge", "tags": ["session-summary"]},
        )
    )
    assert summaries["total"] == 1
    assert len(listed(gateway, token)) == 5


def test_moros_cleanup_compacts_moros_sessions_only_into_a_moros_summary(gateway: Harness) -> None:
    token = gateway.token()
    moros = [
        say(gateway, token, f"moros turn {n}", persona="moros")["session"]["id"] for n in range(7)
    ]
    hecate = [say(gateway, token, f"hecate turn {n}")["session"]["id"] for n in range(7)]

    done = ok(gateway.call(token, "moros_cleanup", {"wallet_address": WALLET}))

    assert [s["id"] for s in done["compacted"]] == moros[:2]  # the oldest first
    assert (done["persona"], done["kept"]) == ("moros", 5)
    assert done["summary_key"].startswith("moros.sessions.summary.")
    summary = ok(
        gateway.call(token, "engram_get", {"wallet_address": WALLET, "key": done["summary_key"]})
    )["engram"]
    assert summary["tags"] == ["moros", "session-summary"]
    content = json.loads(summary["content"])
    assert content["persona"] == "moros"
    assert [said for s in content["sessions"] for said in s["user_said"]] == [
        "moros turn 0",
        "moros turn 1",
    ]
    assert set(listed(gateway, token)) == set(hecate)  # Hecate's seven untouched
    for session_id in moros[:2]:
        gone = gateway.call(
            token,
            "session_append_messages",
            {
                "wallet_address": WALLET,
                "persona": "moros",
                "session_id": session_id,
                "messages": [{"role": "user", "content": "still there?"}],
            },
        )
        assert gone["error"]["status"] == 404


def test_cleanup_touches_only_its_own_team_and_wallet(gateway: Harness) -> None:
    alpha = gateway.token(team="alpha")
    beta = gateway.token(team="beta")
    ids = [say(gateway, alpha, f"alpha turn {n}")["session"]["id"] for n in range(7)]
    other_wallet = [say(gateway, alpha, "x", wallet=OTHER_WALLET)["session"]["id"]]

    from_beta = ok(gateway.call(beta, "hecate_cleanup", {"wallet_address": WALLET}))
    for_other_wallet = ok(gateway.call(alpha, "hecate_cleanup", {"wallet_address": OTHER_WALLET}))

    assert (from_beta["compacted"], from_beta["kept"], from_beta["summary_engram_id"]) == (
        [],
        0,
        None,
    )
    assert (for_other_wallet["compacted"], for_other_wallet["kept"]) == ([], 1)
    assert set(listed(gateway, alpha)) == set(ids)
    assert listed(gateway, alpha, wallet=OTHER_WALLET) == other_wallet
    beta_summaries = ok(
        gateway.call(beta, "engram_search", {"wallet_address": WALLET, "tags": ["session-summary"]})
    )
    assert beta_summaries["total"] == 0


def test_listing_returns_20_sessions_unless_a_limit_is_given(gateway: Harness) -> None:
    token = gateway.token()
    ids = [new_session(gateway, token) for _ in range(22)]

    assert listed(gateway, token) == ids[::-1][:20]
    assert len(listed(gateway, token, limit=100)) == 22


def test_sessions_too_long_for_one_summary_are_compacted_over_several_cleanups(
    gateway: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Escaped text can outgrow the summary engram (a control character takes 6 characters):
    a cleanup then compacts only as many sessions as its summary holds and leaves the rest to
    the next one; every session deleted is in a summary, none twice."""
    from shared.sessions import service

    monkeypatch.setattr(service, "SUMMARY_BUDGET_CHARS", 1_500)
    token = gateway.token()
    ids = [say(gateway, token, f"{n}" + "\x01" * 2_000)["session"]["id"] for n in range(11)]

    rounds = []
    for _ in range(10):
        done = ok(gateway.call(token, "hecate_cleanup", {"wallet_address": WALLET}))
        if not done["compacted"]:
            break
        summary = ok(
            gateway.call(
                token, "engram_get", {"wallet_address": WALLET, "key": done["summary_key"]}
            )
        )["engram"]
        assert len(summary["content"]) <= 1_500
        summarised = [s["id"] for s in json.loads(summary["content"])["sessions"]]
        assert summarised == [s["id"] for s in done["compacted"]]
        rounds.append(summarised)

    assert len(rounds) > 1  # the six old sessions did not fit one summary
    assert sorted(i for r in rounds for i in r) == sorted(ids[:6])
    assert set(listed(gateway, token)) == set(ids[6:])


# --------------------------------------------------------------------------- models


def test_set_model_switches_by_keyword_and_the_session_tools_return_it(gateway: Harness) -> None:
    token = gateway.token()
    switched = ok(gateway.call(token, "hecate_set_model", {"query": "opus"}))
    session = ok(gateway.call(token, "hecate_new_session", {"wallet_address": WALLET}))
    moros = ok(gateway.call(token, "moros_set_model", {"query": "gpt-4o"}))
    for_wallet = ok(
        gateway.call(
            token, "hecate_set_model", {"query": "claude-sonnet", "wallet_address": WALLET}
        )
    )
    listing = ok(gateway.call(token, "hecate_list_sessions", {"wallet_address": WALLET}))
    other = ok(gateway.call(token, "hecate_list_sessions", {"wallet_address": OTHER_WALLET}))
    session_id = session["session"]["id"]
    owned = {"wallet_address": WALLET, "session_id": session_id}
    # Every session tool returns the persona's model for the wallet.
    from_session_tools = [
        say(gateway, token, "which model?", session_id=session_id),
        ok(gateway.call(token, "hecate_resume_session", owned)),
        ok(gateway.call(token, "session_pin", {**owned, "persona": "hecate", "pinned": False})),
        ok(gateway.call(token, "hecate_delete_session", owned)),
    ]
    moros_session = say(gateway, token, "and yours?", persona="moros")

    assert switched["status"] == "switched"
    assert switched["choice"]["model"]["id"] == "claude-opus-4-5"
    assert session["model"]["model"]["id"] == "claude-opus-4-5"
    assert moros["choice"]["model"]["id"] == "gpt-4o"  # not gpt-4o-mini
    assert for_wallet["choice"]["wallet_address"] == WALLET
    assert listing["model"]["model"]["id"] == "claude-sonnet-4-5"
    assert other["model"]["model"]["id"] == "claude-opus-4-5"  # the team's choice
    assert [r["model"]["model"]["id"] for r in from_session_tools] == ["claude-sonnet-4-5"] * 4
    assert moros_session["model"]["model"]["id"] == "gpt-4o"


def test_an_ambiguous_model_query_returns_candidates_and_changes_nothing(
    gateway: Harness,
) -> None:
    token = gateway.token()
    ok(gateway.call(token, "hecate_set_model", {"query": "gpt-4o"}))
    ambiguous = ok(gateway.call(token, "hecate_set_model", {"query": "gemini"}))
    listing = ok(gateway.call(token, "hecate_list_sessions", {"wallet_address": WALLET}))

    assert ambiguous["status"] == "ambiguous"
    assert ambiguous["choice"] is None
    assert {m["id"] for m in ambiguous["candidates"]} == {"gemini-2.5-pro", "gemini-2.5-flash"}
    assert "gemini-2.5-pro" in ambiguous["message"]
    assert listing["model"]["model"]["id"] == "gpt-4o"


def test_an_unknown_model_query_is_an_error_listing_the_closest_names(gateway: Harness) -> None:
    token = gateway.token()
    unknown = gateway.call(token, "moros_set_model", {"query": "gpt-4x-turbo"})
    assert unknown["isError"] is True
    assert unknown["error"]["field"] == "query"
    assert unknown["error"]["status"] == 404
    assert "gpt-4o" in unknown["error"]["message"]


def test_a_configured_catalog_file_replaces_the_shipped_one(
    gateway: Harness, tmp_path: Path
) -> None:
    catalog = tmp_path / "models.json"
    catalog.write_text(
        json.dumps({"models": [{"id": "house-model-1", "name": "House Model", "provider": "us"}]})
    )
    runtime.configure(runtime.settings().model_copy(update={"model_catalog": str(catalog)}))
    token = gateway.token()

    house = ok(gateway.call(token, "hecate_set_model", {"query": "house"}))
    opus = gateway.call(token, "hecate_set_model", {"query": "opus"})

    assert house["choice"]["model"]["id"] == "house-model-1"
    assert opus["isError"] is True
    assert "house-model-1" in opus["error"]["message"]


HOSTILE = [
    "",
    "\x00",
    "a#b",
    "\u202e\ufeff",
    "🪨" * 30_000,
    '"' * 60_000,
    "é" * 60_000,
    "' OR 1=1 --",
    "null",
    "{}",
]


def test_hostile_strings_in_every_argument_never_crash_a_persona_tool(gateway: Harness) -> None:
    """Each string argument of each persona tool, replaced by hostile text: a result (ok or a
    tool error naming a field), never an internal error, on either store."""
    token = gateway.token()
    session_id = new_session(gateway, token)
    engram_id = ok(
        gateway.call(
            token, "hecate_remember", {"wallet_address": WALLET, "key": "k", "content": "v"}
        )
    )["engram"]["id"]
    base: dict[str, dict[str, Any]] = {
        "hecate_new_session": {"wallet_address": WALLET},
        "hecate_list_sessions": {"wallet_address": WALLET},
        "hecate_resume_session": {"wallet_address": WALLET, "session_id": session_id},
        "hecate_remember": {"wallet_address": WALLET, "key": "a.b", "content": "c"},
        "moros_remember": {"wallet_address": WALLET, "key": "a.b", "content": "c"},
        "hecate_cleanup": {"wallet_address": WALLET},
        "moros_cleanup": {"wallet_address": WALLET},
        "hecate_pin_engram": {"id": engram_id},
        "moros_unpin_engram": {"id": engram_id},
        "hecate_set_model": {"query": "opus"},
        "moros_set_model": {"query": "gpt-4o", "wallet_address": WALLET},
        "session_pin": {"wallet_address": WALLET, "persona": "hecate", "session_id": session_id},
        "hecate_delete_session": {"wallet_address": WALLET, "session_id": "ses_gone"},
    }
    for tool, arguments in base.items():
        for name in arguments:
            for text in HOSTILE:
                result = gateway.call(token, tool, {**arguments, name: text})
                if result["isError"]:
                    assert result["error"]["code"] in {"invalid_argument", "not_found", "conflict"}
    for text in HOSTILE:
        result = gateway.call(
            token,
            "session_append_messages",
            {
                "wallet_address": WALLET,
                "persona": "moros",
                "messages": [{"role": "user", "content": text}] * 2,
            },
        )
        if result["isError"]:
            assert result["error"]["field"].startswith("messages")


def test_resuming_a_very_long_session_returns_its_newest_messages_and_counts_the_rest(
    gateway: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    from shared.sessions import service

    monkeypatch.setattr(service, "RESUME_MESSAGES", 5)
    monkeypatch.setattr(service, "RESUME_CHARS", 30)
    token = gateway.token()
    session_id = new_session(gateway, token)
    for n in range(4):
        say(gateway, token, f"turn {n} of the talk", session_id=session_id)  # 20 chars + "ok"

    resumed = ok(
        gateway.call(
            token, "hecate_resume_session", {"wallet_address": WALLET, "session_id": session_id}
        )
    )

    assert [m["content"] for m in resumed["messages"]] == ["ok", "turn 3 of the talk", "ok"]
    assert [m["seq"] for m in resumed["messages"]] == [6, 7, 8]
    assert resumed["earlier_messages"] == 5


def test_model_choices_and_remembered_engrams_stay_in_their_team_and_wallet(
    gateway: Harness,
) -> None:
    alpha = gateway.token(team="alpha")
    beta = gateway.token(team="beta")
    ok(gateway.call(alpha, "hecate_set_model", {"query": "opus"}))
    ok(
        gateway.call(
            alpha, "hecate_remember", {"wallet_address": WALLET, "key": "v.k", "content": "alpha"}
        )
    )

    beta_sessions = ok(gateway.call(beta, "hecate_list_sessions", {"wallet_address": WALLET}))
    beta_engram = ok(gateway.call(beta, "engram_get", {"wallet_address": WALLET, "key": "v.k"}))
    other_wallet = ok(
        gateway.call(alpha, "engram_get", {"wallet_address": OTHER_WALLET, "key": "v.k"})
    )
    beta_write = ok(
        gateway.call(
            beta, "hecate_remember", {"wallet_address": WALLET, "key": "v.k", "content": "beta"}
        )
    )
    alpha_engram = ok(gateway.call(alpha, "engram_get", {"wallet_address": WALLET, "key": "v.k"}))

    assert beta_sessions["model"] is None
    assert beta_engram["engram"] is None
    assert other_wallet["engram"] is None
    assert beta_write["created"] is True
    assert json.loads(alpha_engram["engram"]["content"]) == "alpha"
