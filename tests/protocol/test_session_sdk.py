"""Seed 004 through the official MCP Python SDK client against `cairn serve`: the fourteen
persona tools, and tokens created with `cairn tokens create --context ...`."""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx
import pytest
from mcp.client import Client

from shared.auth import contexts
from tests.jsonrpc import tools_call
from tests.protocol.conftest import LOOPBACK_TLS, LocalServer, mcp_headers, with_sdk_client

pytestmark = pytest.mark.protocol

# The agent context's preset: the six engram CRUD tools.
AGENT_TOOLS = set(contexts.AGENT_TOOLS)

# Seed 004, word for word: each persona tool's description and its arguments' (name ->
# description; the required ones are those the seed marks Yes).
SEED_004_PERSONA_TOOLS: dict[str, tuple[str, dict[str, str], set[str]]] = {
    "hecate_new_session": (
        "Create a new chat session. Clears current conversation and starts fresh.",
        {"wallet_address": "Wallet address of the user"},
        {"wallet_address"},
    ),
    "hecate_list_sessions": (
        "List all chat sessions for a wallet address. Returns session summaries sorted by most "
        "recently updated.",
        {
            "wallet_address": "Wallet address of the user",
            "limit": "Max sessions to return (default 20)",
        },
        {"wallet_address"},
    ),
    "hecate_resume_session": (
        "Resume an existing chat session. Loads the session's message history.",
        {
            "wallet_address": "Wallet address of the user",
            "session_id": "ID of the session to resume",
        },
        {"session_id", "wallet_address"},
    ),
    "hecate_delete_session": (
        "Delete a chat session. Cannot delete pinned sessions.",
        {
            "wallet_address": "Wallet address of the user",
            "session_id": "ID of the session to delete",
        },
        {"session_id", "wallet_address"},
    ),
    "hecate_remember": (
        "Proactively save important context about a visitor. Use when they share preferences, "
        "facts, decisions, or anything worth remembering.",
        {
            "wallet_address": "Wallet address of the visitor",
            "key": "Dot-path key (e.g., `visitor.preference.chains`)",
            "content": "Information to remember",
            "engram_type": "`persona`, `preference`, `knowledge`",
        },
        {"content", "key", "wallet_address"},
    ),
    "hecate_cleanup": (
        "Compact old conversation sessions. Keeps 5 most recent and all pinned sessions.",
        {"wallet_address": "Wallet address to clean up"},
        {"wallet_address"},
    ),
    "hecate_pin_engram": (
        "Pin an engram to protect it from cleanup/deletion.",
        {"id": "Engram ID to pin"},
        {"id"},
    ),
    "hecate_unpin_engram": (
        "Remove pin protection from an engram, allowing deletion.",
        {"id": "Engram ID to unpin"},
        {"id"},
    ),
    "hecate_set_model": (
        "Switch the AI model. Search by name or keyword.",
        {"query": "Model name or keyword (e.g., `opus`, `claude-sonnet`, `gpt-4o`)"},
        {"query"},
    ),
    "moros_remember": (
        "Proactively save important context about a visitor.",
        {
            "wallet_address": "Wallet address of the visitor",
            "key": "Dot-path key",
            "content": "Information to remember",
            "engram_type": "`persona`, `preference`, `knowledge`",
        },
        {"content", "key", "wallet_address"},
    ),
    "moros_cleanup": (
        "Compact old conversation sessions. Keeps 5 most recent and all pinned.",
        {"wallet_address": "Wallet address to clean up"},
        {"wallet_address"},
    ),
    "moros_pin_engram": (
        "Pin an engram to protect it from cleanup/deletion.",
        {"id": "Engram ID to pin"},
        {"id"},
    ),
    "moros_unpin_engram": (
        "Remove pin protection from an engram.",
        {"id": "Engram ID to unpin"},
        {"id"},
    ),
    "moros_set_model": (
        "Switch the AI model for Moros.",
        {"query": "Model name or keyword"},
        {"query"},
    ),
}


async def _all_tools(client: Client) -> dict[str, Any]:
    tools: dict[str, Any] = {}
    cursor: str | None = None
    while True:
        page = await client.list_tools(cursor=cursor)
        tools.update({tool.name: tool for tool in page.tools})
        cursor = page.next_cursor
        if not cursor:
            return tools


async def _ok(client: Client, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(name, arguments)
    assert not result.is_error, (name, result.content)
    structured: dict[str, Any] = result.structured_content
    return structured


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_the_fourteen_persona_tools_work_through_the_sdk_client(
    server: LocalServer, mode: str
) -> None:
    wallet = f"0x{uuid.uuid4().hex[:12]}"

    async def scenario(client: Client) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        # Listed first, the SDK checks every result's structuredContent against the tool's
        # outputSchema (unlisted, it only warns that it cannot).
        await _all_tools(client)
        seen["set_model"] = await _ok(client, "hecate_set_model", {"query": "claude-sonnet"})
        await _ok(client, "moros_set_model", {"query": "gpt-4o", "wallet_address": wallet})
        ids = []
        for n in range(7):
            started = await _ok(client, "hecate_new_session", {"wallet_address": wallet})
            ids.append(started["session"]["id"])
            await _ok(
                client,
                "session_append_messages",
                {
                    "wallet_address": wallet,
                    "persona": "hecate",
                    "session_id": started["session"]["id"],
                    "messages": [{"role": "user", "content": f"note {n}"}],
                },
            )
        await _ok(
            client,
            "session_append_messages",
            {
                "wallet_address": wallet,
                "persona": "moros",
                "messages": [{"role": "user", "content": "moros hello"}],
            },
        )
        seen["resumed"] = await _ok(
            client, "hecate_resume_session", {"wallet_address": wallet, "session_id": ids[0]}
        )
        seen["remembered"] = await _ok(
            client,
            "hecate_remember",
            {"wallet_address": wallet, "key": "visitor.chain", "content": "Base"},
        )
        await _ok(
            client,
            "moros_remember",
            {
                "wallet_address": wallet,
                "key": "visitor.risk",
                "content": "low",
                "engram_type": "preference",
            },
        )
        engram_id = seen["remembered"]["engram"]["id"]
        await _ok(client, "hecate_pin_engram", {"id": engram_id})
        await _ok(client, "moros_pin_engram", {"id": engram_id})
        seen["refused"] = await client.call_tool("engram_delete", {"id": engram_id})
        await _ok(client, "hecate_unpin_engram", {"id": engram_id})
        await _ok(client, "hecate_pin_engram", {"id": engram_id})
        await _ok(client, "moros_unpin_engram", {"id": engram_id})
        await _ok(
            client,
            "session_pin",
            {"wallet_address": wallet, "persona": "hecate", "session_id": ids[1]},
        )
        seen["cleanup"] = await _ok(client, "hecate_cleanup", {"wallet_address": wallet})
        seen["moros_cleanup"] = await _ok(client, "moros_cleanup", {"wallet_address": wallet})
        await _ok(client, "hecate_delete_session", {"wallet_address": wallet, "session_id": ids[6]})
        seen["listed"] = await _ok(client, "hecate_list_sessions", {"wallet_address": wallet})
        seen["ids"] = ids
        return seen

    seen = with_sdk_client(server, scenario, mode=mode)
    ids = seen["ids"]

    assert seen["set_model"]["choice"]["model"]["id"] == "claude-sonnet-4-5"
    assert [m["content"] for m in seen["resumed"]["messages"]] == ["note 0"]
    assert seen["remembered"]["created"] is True
    assert seen["refused"].is_error
    assert seen["refused"].structured_content["error"]["status"] == 409
    # 7 sessions: the resumed one (0) is the most recent, 1 is pinned; 2 is the oldest other.
    assert [s["id"] for s in seen["cleanup"]["compacted"]] == [ids[2]]
    assert seen["cleanup"]["summary_key"].startswith("hecate.sessions.summary.")
    assert seen["moros_cleanup"]["compacted"] == []
    assert {s["id"] for s in seen["listed"]["sessions"]} == {*ids[:2], *ids[3:6]}
    assert seen["listed"]["model"]["model"]["id"] == "claude-sonnet-4-5"


def test_every_seed_004_tool_is_listed_with_its_annotations(server: LocalServer) -> None:
    tools = with_sdk_client(server, _all_tools)
    categories = {
        "hecate_new_session": (False, False, False),
        "hecate_list_sessions": (True, False, True),
        "hecate_resume_session": (False, False, False),
        "hecate_delete_session": (False, True, False),
        "hecate_remember": (False, False, True),
        "hecate_cleanup": (False, True, False),
        "hecate_pin_engram": (False, False, True),
        "hecate_unpin_engram": (False, False, False),
        "hecate_set_model": (False, False, False),
        "moros_remember": (False, False, True),
        "moros_cleanup": (False, True, False),
        "moros_pin_engram": (False, False, True),
        "moros_unpin_engram": (False, False, False),
        "moros_set_model": (False, False, False),
    }
    for name, (read_only, destructive, idempotent) in categories.items():
        hints = tools[name].annotations
        assert (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint) == (
            read_only,
            destructive,
            idempotent,
        ), name
    assert set(categories) == set(SEED_004_PERSONA_TOOLS)
    for name, (description, arguments, required) in SEED_004_PERSONA_TOOLS.items():
        schema = tools[name].input_schema
        assert tools[name].description == description, name
        assert set(schema.get("required", [])) == required, name
        assert {arg: schema["properties"][arg].get("description") for arg in arguments} == (
            arguments
        ), name
        # The one argument cairn adds (docs/sessions.md): set_model's optional wallet_address.
        extra = set(schema["properties"]) - set(arguments)
        assert extra == ({"wallet_address"} if name.endswith("_set_model") else set()), name
    assert set(tools) >= AGENT_TOOLS
    assert {"user_profile_get", "user_profile_update"} <= set(tools)


def _raw_call(server: LocalServer, token: str, tool: str, arguments: dict[str, Any]) -> Any:
    return httpx.post(
        server.url,
        headers=mcp_headers(token, **{"MCP-Protocol-Version": "2025-11-25"}),
        json=tools_call(tool, arguments),
        timeout=30,
        verify=LOOPBACK_TLS,
    )


def test_an_agent_context_token_sees_exactly_the_six_engram_tools_and_gets_32002_for_others(
    server: LocalServer,
) -> None:
    team = f"ctx-{uuid.uuid4().hex[:8]}"
    token = server.create_token(team, "memory,sessions", "agent", "--context", "agent")

    listed = with_sdk_client(server, _all_tools, token=token)
    refused = _raw_call(server, token, "memory_get", {"key": "x"})
    persona = _raw_call(server, token, "hecate_new_session", {"wallet_address": "0x1"})
    allowed = _raw_call(
        server,
        token,
        "engram_create",
        {"wallet_address": "0x1", "engram_type": "knowledge", "key": "k", "content": "{}"},
    )

    assert set(listed) == AGENT_TOOLS
    for response in (refused, persona):
        assert response.status_code == 403
        assert response.json()["error"]["code"] == -32002
        assert "'agent' context" in response.json()["error"]["message"]
    assert allowed.status_code == 200
    assert allowed.json()["result"]["isError"] is False


def test_a_team_changes_a_preset_for_its_own_tokens_only(server: LocalServer) -> None:
    team, other = f"ctx-{uuid.uuid4().hex[:8]}", f"ctx-{uuid.uuid4().hex[:8]}"
    token = server.create_token(team, "memory,sessions", "agent", "--context", "agent")
    others = server.create_token(other, "memory,sessions", "agent", "--context", "agent")
    crossroads = server.create_token(team, "admin", "market", "--context", "crossroads")
    internal = server.create_token(team, "admin", "dev", "--context", "internal")

    changed = server.cli(
        "tokens", "context", "set", "--team", team, "agent", "--tools", "engram_get,recall"
    )
    after_set = set(with_sdk_client(server, _all_tools, token=token))
    other_team = set(with_sdk_client(server, _all_tools, token=others))
    listing = [
        json.loads(line)
        for line in server.cli("tokens", "context", "list", "--team", team).stdout.splitlines()
    ]
    server.cli("tokens", "context", "reset", "--team", team, "agent")
    after_reset = set(with_sdk_client(server, _all_tools, token=token))
    market = set(with_sdk_client(server, _all_tools, token=crossroads))
    everything = set(with_sdk_client(server, _all_tools, token=internal))
    all_tools = set(with_sdk_client(server, _all_tools))

    assert json.loads(changed.stdout)["tools"] == ["engram_get", "recall"]
    assert after_set == {"engram_get", "recall"}
    assert other_team == AGENT_TOOLS
    assert {v["name"]: v["source"] for v in listing} == {
        "agent": "team",
        "crossroads": "preset",
        "internal": "preset",
    }
    assert after_reset == AGENT_TOOLS
    assert market == set()
    assert everything == all_tools


def test_context_and_tools_together_are_refused_by_the_cli(server: LocalServer) -> None:
    done = server.cli(
        "tokens",
        "create",
        "--team",
        "t",
        "--name",
        "n",
        "--scopes",
        "memory",
        "--context",
        "agent",
        "--tools",
        "memory_get",
        check=False,
    )
    assert done.returncode != 0
    assert "context" in done.stderr


def test_a_context_naming_a_tool_cairn_does_not_serve_is_refused(server: LocalServer) -> None:
    team = f"ctx-{uuid.uuid4().hex[:8]}"
    done = server.cli(
        "tokens", "context", "set", "--team", team, "agent", "--tools", "engram_gte", check=False
    )
    listing = server.cli("tokens", "context", "list", "--team", team).stdout.splitlines()

    assert done.returncode != 0
    assert "engram_gte" in done.stderr
    assert all(json.loads(line)["source"] == "preset" for line in listing)
