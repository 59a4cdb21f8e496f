"""`/mcp/<toolset>` through the gateway: a toolset narrows what a connection lists and may call,
never what the token may call; a token's default toolsets are what `/mcp` serves it."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from shared.app.gateway import create_app
from shared.app.groups import load_catalog, load_groups
from shared.app.toolsets import TOOLSETS
from shared.auth.models import TokenRequest
from shared.auth.wiring import build_token_service
from shared.config.settings import Settings
from shared.protocol import jsonrpc
from shared.protocol.gateway import GatewayConfig, HttpReply, McpGateway
from shared.tools.invoker import InProcessInvoker

BASE = "http://testserver"


class Client:
    def __init__(self, gateway: McpGateway, settings: Settings) -> None:
        self.gateway = gateway
        self.tokens = build_token_service(settings)

    def token(self, scopes: tuple[str, ...] = ("admin",), **extra: object) -> str:
        request = TokenRequest.model_validate(
            {"team": "alpha", "name": "t", "scopes": scopes, **extra}
        )
        return self.tokens.issue(request).secret

    def post(self, token: str | None, toolset: str | None, method: str, **params: Any) -> HttpReply:
        headers = {"content-type": "application/json", "accept": "application/json"}
        if token is not None:
            headers["authorization"] = f"Bearer {token}"
        body = json.dumps({"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
        return self.gateway.handle_post(body.encode(), headers, BASE, toolset)

    def names(self, token: str, toolset: str | None) -> list[str]:
        reply = self.post(token, toolset, "tools/list")
        assert reply.status == 200, reply.body
        assert reply.body is not None
        return [tool["name"] for tool in reply.body["result"]["tools"]]


@pytest.fixture
def client(aws: Settings) -> Client:
    tokens = build_token_service(aws)
    gateway = McpGateway(
        load_catalog(),
        InProcessInvoker(load_groups(), threading.RLock()),
        tokens,
        GatewayConfig(),
        toolsets=TOOLSETS,
    )
    return Client(gateway, aws)


def _selected(segment: str) -> frozenset[str]:
    chosen = TOOLSETS.select(segment)
    assert chosen is not None
    return chosen


def test_a_toolset_url_lists_exactly_its_tools_and_all_lists_every_one(client: Client) -> None:
    admin = client.token()

    assert set(client.names(admin, "memory+search")) == _selected("memory") | _selected("search")
    assert set(client.names(admin, "verbs")) == _selected("verbs")
    assert len(client.names(admin, "all")) == 97
    # No default toolsets on the token: /mcp serves all it may call.
    assert client.names(admin, None) == client.names(admin, "all")


def test_a_tokens_default_toolsets_are_what_bare_mcp_serves(client: Client) -> None:
    token = client.token(toolsets=["core"])

    assert set(client.names(token, None)) == _selected("core")
    assert len(client.names(token, "all")) == 97


def test_a_narrow_token_at_a_wide_toolset_sees_only_what_its_scopes_allow(
    client: Client,
) -> None:
    narrow = client.token(scopes=("memory.read",))

    listed = set(client.names(narrow, "all"))
    assert listed
    assert listed <= set(client.names(client.token(), "all"))
    assert "memory_get" in listed
    assert "memory_put" not in listed
    assert set(client.names(narrow, "hoard")) == listed & _selected("hoard")
    refused = client.post(narrow, "all", "tools/call", name="memory_put", arguments={})
    assert refused.body is not None
    assert refused.body["error"]["code"] == jsonrpc.MISSING_SCOPE


def test_a_tool_off_the_connections_toolsets_is_refused_with_32002_naming_where_it_is(
    client: Client,
) -> None:
    admin = client.token()

    reply = client.post(
        admin, "memory", "tools/call", name="store_handoff", arguments={"title": "x"}
    )

    assert reply.body is not None
    assert reply.body["error"]["code"] == jsonrpc.MISSING_SCOPE == -32002
    assert "/mcp/handoffs" in reply.body["error"]["message"]
    called = client.post(admin, "memory", "tools/call", name="memory_get", arguments={"key": "k"})
    assert called.body is not None
    assert called.body["result"]["isError"] is False


def test_a_core_token_is_refused_at_bare_mcp_what_core_leaves_out(client: Client) -> None:
    token = client.token(toolsets=["core"])

    reply = client.post(token, None, "tools/call", name="memory_get", arguments={"key": "k"})

    assert reply.body is not None
    assert reply.body["error"]["code"] == -32002


def test_an_unknown_toolset_is_a_404_naming_the_known_ones(client: Client) -> None:
    reply = client.post(client.token(), "memroy", "tools/list")

    assert reply.status == 404
    assert reply.body is not None
    assert "known: core, memory" in reply.body["error"]["message"]


def test_the_instructions_say_where_the_other_tools_are(client: Client) -> None:
    reply = client.post(client.token(toolsets=["core"]), None, "initialize")
    assert reply.body is not None
    text = reply.body["result"]["instructions"]

    assert "/mcp/all (all 97)" in text
    assert "/mcp/workflows" in text
    assert "/mcp/core" not in text
    assert "recall" in text
    everything = client.post(client.token(), "all", "initialize")
    assert everything.body is not None
    assert "other URLs" not in everything.body["result"]["instructions"]


def test_each_mcp_url_has_its_rfc_9728_metadata_and_challenge(client: Client) -> None:
    app = create_app(client.gateway)
    from starlette.testclient import TestClient

    http = TestClient(app)
    metadata = http.get("/.well-known/oauth-protected-resource/mcp/memory+search")
    assert metadata.status_code == 200
    assert metadata.json()["resource"] == "http://testserver/mcp/memory+search"
    assert http.get("/.well-known/oauth-protected-resource/mcp/nope").status_code == 404
    assert http.get("/mcp/hippo").status_code == 405

    refused = http.post("/mcp/hippo", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert refused.status_code == 401
    assert "oauth-protected-resource/mcp/hippo" in refused.headers["www-authenticate"]
    listed = http.post(
        "/mcp/hippo",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"authorization": f"Bearer {client.token()}"},
    )
    assert len(listed.json()["result"]["tools"]) == 9


def test_toolsets_travel_with_the_token_in_the_dynamodb_store(client: Client) -> None:
    issued = client.tokens.issue(
        TokenRequest(team="alpha", name="t", scopes=("memory",), toolsets=("memory", "search"))
    )

    found = client.tokens.find(issued.secret)

    assert found is not None
    assert found.toolsets == ("memory", "search")
