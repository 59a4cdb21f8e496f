"""Clients written against a seed connect as the seed documents, over plain HTTP to a real
`cairn serve`: seed 004's `POST /mcp/jsonrpc` and seed 000's `token` argument."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests.protocol.conftest import LOOPBACK_TLS, LocalServer

pytestmark = pytest.mark.protocol


def _post(server: LocalServer, path: str, message: Any, token: str | None) -> httpx.Response:
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return httpx.post(
        f"http://127.0.0.1:{server.port}{path}",
        content=json.dumps(message).encode(),
        headers=headers,
        timeout=30,
        verify=LOOPBACK_TLS,
    )


def _call(tool: str, arguments: dict[str, Any], id_: int = 2) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": id_,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }


LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}


def test_post_mcp_jsonrpc_lists_the_tools_mcp_lists(server: LocalServer) -> None:
    via_seed = _post(server, "/mcp/jsonrpc", LIST, server.dev_token)
    via_mcp = _post(server, "/mcp", LIST, server.dev_token)

    assert via_seed.status_code == 200
    names = [tool["name"] for tool in via_seed.json()["result"]["tools"]]
    assert names == [tool["name"] for tool in via_mcp.json()["result"]["tools"]]
    assert "recall" in names


def test_post_mcp_jsonrpc_calls_a_tool(server: LocalServer) -> None:
    put = _post(
        server, "/mcp/jsonrpc", _call("memory_put", {"key": "jr", "content": "x"}), server.dev_token
    )

    assert put.status_code == 200
    assert put.json()["result"]["isError"] is False


def test_post_mcp_jsonrpc_without_a_token_is_a_401_saying_how_to_send_one(
    server: LocalServer,
) -> None:
    reply = _post(server, "/mcp/jsonrpc", LIST, None)

    assert reply.status_code == 401
    error = reply.json()["error"]
    assert error["code"] == -32001
    assert "Authorization: Bearer" in error["data"]["how"]
    assert "/.well-known/oauth-protected-resource/mcp" in reply.headers["www-authenticate"]


def test_get_mcp_jsonrpc_is_405_as_on_mcp(server: LocalServer) -> None:
    reply = httpx.get(
        f"http://127.0.0.1:{server.port}/mcp/jsonrpc", timeout=30, verify=LOOPBACK_TLS
    )

    assert reply.status_code == 405
    assert reply.headers["allow"] == "POST"


def test_a_hoard_style_call_with_only_a_token_argument_works(server: LocalServer) -> None:
    secret = server.create_token("hoardish", "memory", "hoard-client")

    put = _post(
        server, "/mcp", _call("memory_put", {"key": "h1", "content": "c", "token": secret}), None
    )
    got = _post(server, "/mcp/hoard", _call("memory_get", {"key": "h1", "token": secret}), None)

    assert put.status_code == 200, put.text
    assert put.json()["result"]["memory"]["key"] == "h1"
    assert got.json()["result"]["memory"]["content"] == "c"
    assert secret not in got.text


def test_a_hoard_style_call_with_a_wrong_token_argument_is_32001(server: LocalServer) -> None:
    reply = _post(
        server, "/mcp", _call("memory_get", {"key": "h1", "token": "cairn_sk_wrong"}), None
    )

    assert reply.status_code == 401
    assert reply.json()["error"]["code"] == -32001
    assert "cairn_sk_wrong" not in reply.text
