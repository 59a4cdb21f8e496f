"""What an MCP SDK user sees of a tool error: `field`, `status`, `holder` in structuredContent.

The official Python SDK client keeps only the known keys of a CallToolResult (so seed 002's
`result.error` is dropped) and validates `structuredContent` against the tool's outputSchema for
successful results only (`ClientSession.call_tool`: `if ... not result.is_error:
validate_tool_result`), so the error object reaches the SDK user under `structured_content`.
"""

from __future__ import annotations

import uuid
from typing import Any

import anyio
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from tests.protocol.conftest import LocalServer, mcp_http_client

pytestmark = pytest.mark.protocol

MODES = ["auto", "legacy", "2026-07-28"]
HANDOFF_DOCUMENT = (
    "## Start & intent\nx\n\n## Journey\nx\n\n## Current state\nx\n\n## What’s left\nx\n\n"
    "## Open questions\nx\n"
)


@pytest.mark.parametrize("mode", MODES)
def test_an_sdk_user_reads_field_status_and_holder_from_structured_content(
    server: LocalServer, mode: str
) -> None:
    async def main() -> tuple[Any, Any, Any]:
        http = mcp_http_client(headers={"Authorization": f"Bearer {server.dev_token}"})
        async with http:
            transport = streamable_http_client(server.url, http_client=http)
            async with Client(transport, mode=mode) as client:
                missing = await client.call_tool("claim_handoff", {"handoff_id": "hof_nope"})
                stored = await client.call_tool(
                    "store_handoff",
                    {"title": f"t-{uuid.uuid4().hex[:8]}", "document_md": HANDOFF_DOCUMENT},
                )
                handoff_id = stored.structured_content["handoff"]["id"]
                await client.call_tool("claim_handoff", {"handoff_id": handoff_id})
                taken = await client.call_tool("claim_handoff", {"handoff_id": handoff_id})
                invalid = await client.call_tool("memory_search", {"query": "x", "limit": 500})
                return missing, taken, invalid

    missing, taken, invalid = anyio.run(main)

    assert missing.is_error
    assert missing.structured_content["error"]["field"] == "handoff_id"
    assert missing.structured_content["error"]["status"] == 404
    assert missing.structured_content["error"]["code"] == "not_found"
    assert "`handoff_id`" in missing.content[0].text
    assert taken.is_error
    assert taken.structured_content["error"]["status"] == 409
    assert taken.structured_content["error"]["holder"]["agent_id"]
    assert invalid.is_error
    assert invalid.structured_content["error"]["field"] == "limit"
    assert invalid.structured_content["error"]["message"] == invalid.content[0].text
