"""The official MCP SDK client, in each of its connect modes, through `/mcp/<toolset>` and a
seed-shaped endpoint of `cairn serve`: it lists exactly that URL's tools and calls them,
validating every structured result against the compact output schemas without a warning."""

from __future__ import annotations

import logging
from typing import Any

import anyio
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from shared.app.groups import tool_specs
from shared.app.toolsets import TOOLSETS
from tests.protocol.conftest import LocalServer, mcp_http_client, with_sdk_client

pytestmark = pytest.mark.protocol

MODES = ["auto", "legacy", "2026-07-28"]


def _tools(segment: str) -> set[str]:
    chosen = TOOLSETS.select(segment)
    assert chosen is not None
    return set(chosen)


@pytest.mark.parametrize("mode", MODES)
def test_a_toolset_url_lists_and_calls_its_tools_and_refuses_others(
    server: LocalServer, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    key = f"toolsets-{mode}"

    async def work(client: Client) -> tuple[set[str], Any, Any, Any]:
        listed = {tool.name for tool in (await client.list_tools()).tools}
        put = await client.call_tool("memory_put", {"key": key, "content": "blue"})
        found = await client.call_tool("search", {"query": "blue"})
        with pytest.raises(MCPError) as refused:
            await client.call_tool("store_handoff", {"title": "x"})
        return listed, put, found, refused.value

    with caplog.at_level(logging.WARNING):
        listed, put, found, refused = with_sdk_client(
            server, work, mode=mode, path="/memory+search"
        )

    assert listed == _tools("memory") | _tools("search")
    assert not put.is_error
    assert put.structured_content["memory"]["key"] == key
    assert not found.is_error
    assert refused.code == -32002
    assert "/mcp/handoffs" in refused.message
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


@pytest.mark.parametrize("mode", MODES)
def test_a_seed_endpoint_serves_its_seeds_tools_with_their_schemas(
    server: LocalServer, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    async def work(client: Client) -> tuple[list[Any], Any]:
        listed = (await client.list_tools()).tools
        recalled = await client.call_tool("recall", {"query": "anything"})
        return listed, recalled

    with caplog.at_level(logging.WARNING):
        listed, recalled = with_sdk_client(server, work, mode=mode, path="/verbs")

    assert {tool.name for tool in listed} == _tools("verbs")
    assert all(tool.output_schema is not None for tool in listed)
    assert not recalled.is_error
    assert "memories" in recalled.structured_content
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


def test_a_token_created_with_toolsets_gets_them_at_bare_mcp_and_the_rest_at_all(
    server: LocalServer,
) -> None:
    secret = server.create_token("local", "admin", "narrow-view", "--toolsets", "handoffs")

    async def listed(path: str) -> set[str]:
        http = mcp_http_client(headers={"Authorization": f"Bearer {secret}"})
        async with http:
            transport = streamable_http_client(server.url + path, http_client=http)
            async with Client(transport, mode="legacy") as client:  # type: ignore[arg-type]
                return {tool.name for tool in (await client.list_tools()).tools}

    assert anyio.run(listed, "") == _tools("handoffs")
    assert len(anyio.run(listed, "/all")) == len(tool_specs())
    refused = server.cli(
        "tokens",
        "create",
        "--team",
        "local",
        "--name",
        "x",
        "--scopes",
        "admin",
        "--toolsets",
        "memroy",
        check=False,
    )
    assert refused.returncode != 0
    assert "known: core, memory" in refused.stderr
