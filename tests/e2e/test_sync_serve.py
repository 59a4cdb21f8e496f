"""Sync end to end through `cairn serve` with the official MCP SDK client: a team schedule set,
read and deleted with the sync tools, an inbox file synced, embeddings_build (memories
included), sync_status, and a clean stop with the sync scheduler and run worker running."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.protocol.conftest import free_port, sdk_call, start_server, stop_server

pytestmark = pytest.mark.protocol


def test_schedules_syncs_and_rebuilds_through_cairn_serve(tmp_path: Path) -> None:
    server = start_server(tmp_path / "data", free_port())

    async def main() -> dict[str, Any]:
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {server.dev_token}"})
        async with http, Client(streamable_http_client(server.url, http_client=http)) as client:
            listed = {tool.name for tool in (await client.list_tools()).tools}
            made = await sdk_call(client, "sync_schedule_set", {"every": "30m"})
            got = await sdk_call(client, "sync_schedule_get", {})
            await sdk_call(client, "inbox_put", {"content": "the ferry leaves at nine"})
            synced = await sdk_call(client, "sync", {})
            await sdk_call(client, "memory_put", {"key": "kiln", "content": "fires at dawn"})
            built = await sdk_call(client, "embeddings_build", {})
            status = await sdk_call(client, "sync_status", {})
            deleted = await sdk_call(client, "sync_schedule_delete", {})
            gone = await sdk_call(client, "sync_schedule_get", {})
            return {
                "listed": listed,
                "made": made,
                "got": got,
                "synced": synced,
                "built": built,
                "status": status,
                "deleted": deleted,
                "gone": gone,
            }

    try:
        seen = anyio.run(main)
    finally:
        output = stop_server(server)

    assert {"sync_schedule_set", "sync_schedule_get", "sync_schedule_delete"} <= seen["listed"]
    assert seen["made"]["schedule"]["expression"] == "rate(30 minutes)"
    assert seen["got"]["schedule"]["schedule"] == "sync-local"
    assert seen["synced"]["connectors"][0]["stats"]["entities_seen"] == 1
    assert seen["built"]["total"] >= 2  # the inbox document's chunk and the memory
    assert [c["entities"] for c in seen["status"]["connectors"] if c["source"] == "inbox"] == [1]
    assert seen["deleted"] == {"deleted": True}
    assert seen["gone"] == {"schedule": None}
    assert server.process.returncode == 0, output
