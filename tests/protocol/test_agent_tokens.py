"""Agent tokens against `cairn serve`: what a registered agent may do, and how its token dies."""

from __future__ import annotations

import json
import uuid
from datetime import datetime
from typing import Any

import httpx
import pytest

from tests.protocol.conftest import LOOPBACK_TLS, LocalServer

pytestmark = pytest.mark.protocol

HANDOFF_DOCUMENT = (
    "## Start & intent\nShip the exporter.\n\n## Journey\nTried the ORM.\n\n"
    "## Current state\nHalf done.\n\n## What’s left\nThe CSV writer.\n\n"
    "## Open questions\nNone.\n"
)


def _rpc(server: LocalServer, token: str, method: str, params: dict[str, Any]) -> httpx.Response:
    return httpx.post(
        server.url,
        json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params},
        headers={"Authorization": f"Bearer {token}", "Accept": "application/json"},
        timeout=30,
        verify=LOOPBACK_TLS,
    )


def _call(server: LocalServer, token: str, tool: str, arguments: dict[str, Any]) -> Any:
    response = _rpc(server, token, "tools/call", {"name": tool, "arguments": arguments})
    assert response.status_code == 200, response.text
    result = response.json()["result"]
    assert result["isError"] is False, result
    return result["structuredContent"]


def _token_record(server: LocalServer, team: str, name: str) -> dict[str, Any]:
    lines = server.cli("tokens", "list", "--team", team).stdout.splitlines()
    (record,) = [r for r in map(json.loads, lines) if r["name"] == name]
    return record  # type: ignore[no-any-return]


def _registrar(server: LocalServer, prefix: str, *options: str) -> tuple[str, str]:
    """A new team named after `prefix`, and a token of it that may register agents (issued
    with the CLI's `options`)."""
    team = f"{prefix}-{uuid.uuid4().hex[:8]}"
    return team, server.create_token(team, "agent.register", "registrar", *options)


def _register(server: LocalServer, registrar: str, name: str) -> dict[str, Any]:
    agent: dict[str, Any] = _call(
        server, registrar, "agent.register", {"name": name, "agent_type": "worker"}
    )
    return agent


def test_a_registered_agent_stores_lists_and_claims_handoffs_with_its_own_token(
    server: LocalServer,
) -> None:
    _, registrar = _registrar(server, "handoff")
    writer = _register(server, registrar, "writer")
    reader = _register(server, registrar, "reader")

    stored = _call(
        server,
        writer["token"],
        "store_handoff",
        {"title": "Exporter", "document_md": HANDOFF_DOCUMENT},
    )
    listed = _call(server, reader["token"], "list_handoffs", {})
    claimed = _call(
        server, reader["token"], "claim_handoff", {"handoff_id": stored["handoff"]["id"]}
    )

    assert "handoff" in writer["scopes"]
    assert stored["handoff"]["created_by"] == writer["agent_id"]
    assert [h["id"] for h in listed["handoffs"]] == [stored["handoff"]["id"]]
    assert claimed["handoff"]["claim"]["agent_id"] == reader["agent_id"]


def test_an_agent_token_inherits_its_registrars_expiry_and_rate_limit(
    server: LocalServer,
) -> None:
    team, registrar = _registrar(server, "inherit", "--expires-days", "3", "--rate-limit", "40")

    _register(server, registrar, "builder")

    issuer = _token_record(server, team, "registrar")
    minted = _token_record(server, team, "agent:builder")
    assert minted["issued_by"] == issuer["token_id"]
    assert minted["rate_limit_per_minute"] == 40
    assert datetime.fromisoformat(minted["expires_at"]) == datetime.fromisoformat(
        issuer["expires_at"]
    )


def test_revoking_a_registration_token_revokes_the_agent_tokens_it_minted(
    server: LocalServer,
) -> None:
    team, registrar = _registrar(server, "cascade")
    first = _register(server, registrar, "first")
    second = _register(server, registrar, "second")
    bystander = server.create_token(team, "memory", "bystander")
    issuer_id = _token_record(server, team, "registrar")["token_id"]

    revoked = server.cli("tokens", "revoke", issuer_id)

    assert "and 2 token(s) it issued with it" in revoked.stderr
    for secret in (registrar, first["token"], second["token"]):
        assert _rpc(server, secret, "ping", {}).status_code == 401
    assert _rpc(server, bystander, "ping", {}).status_code == 200


def test_instructions_name_only_the_tools_the_token_may_call(server: LocalServer) -> None:
    team, registrar = _registrar(server, "instr")
    agent = _register(server, registrar, "builder")
    memory_only = server.create_token(team, "memory.read", "reader")
    handshake = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t"}}

    agent_text = _rpc(server, agent["token"], "initialize", handshake).json()["result"]
    reader_text = _rpc(server, memory_only, "initialize", handshake).json()["result"]

    assert "store_handoff" in agent_text["instructions"]
    assert "task.claim" in agent_text["instructions"]
    assert "recall" in reader_text["instructions"]
    for absent in ("store_handoff", "list_handoffs", "task.", "remember", "memory_put"):
        assert absent not in reader_text["instructions"], absent


def test_server_discover_instructions_follow_the_token_too(server: LocalServer) -> None:
    team = f"discover-{uuid.uuid4().hex[:8]}"
    memory_only = server.create_token(team, "memory.read", "reader")
    handoffs_only = server.create_token(team, "handoff", "handoffs")

    def discover(token: str) -> str:
        response = httpx.post(
            server.url,
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "server/discover",
                "params": {
                    "_meta": {
                        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                        "io.modelcontextprotocol/clientCapabilities": {},
                    }
                },
            },
            headers={
                "Authorization": f"Bearer {token}",
                "Accept": "application/json",
                "MCP-Protocol-Version": "2026-07-28",
                "Mcp-Method": "server/discover",
            },
            timeout=30,
            verify=LOOPBACK_TLS,
        )
        assert response.status_code == 200, response.text
        instructions: str = response.json()["result"]["instructions"]
        return instructions

    reader, handoffs = discover(memory_only), discover(handoffs_only)

    assert "recall" in reader
    assert "store_handoff" not in reader
    assert "store_handoff" in handoffs
    assert "claim_handoff" in handoffs
    assert "recall" not in handoffs
