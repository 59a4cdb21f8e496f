"""Domain events through the official MCP SDK client against `cairn serve` (the embedded
default): a handoff stored and claimed over the wire shows up in `event.poll` as cairn's own
events (docs/events.md), and an agent cannot publish one."""

from __future__ import annotations

import uuid
from typing import Any

import anyio
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from tests.protocol.conftest import LocalServer, mcp_http_client, sdk_call
from tests.unit.test_handoff_sections import VALID

pytestmark = pytest.mark.protocol


def test_handoff_events_reach_event_poll_through_the_sdk_client(server: LocalServer) -> None:
    team = f"events-{uuid.uuid4().hex[:8]}"
    token = server.create_token(team, "handoff,event.read,event.write")

    async def main() -> list[dict[str, Any]]:
        http = mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        async with http, Client(streamable_http_client(server.url, http_client=http)) as client:
            stored = await sdk_call(
                client, "store_handoff", {"title": "billing export", "document_md": VALID}
            )
            await sdk_call(client, "claim_handoff", {"handoff_id": stored["handoff"]["id"]})
            forged = await client.call_tool(
                "event.publish", {"event_type": "cairn.handoff.stored", "payload": {}}
            )
            assert forged.is_error
            polled: list[dict[str, Any]] = (await sdk_call(client, "event.poll", {}))["events"]
            assert all(e["payload"]["handoff_id"] == stored["handoff"]["id"] for e in polled)
            return polled

    polled = anyio.run(main)

    assert [e["event_type"] for e in polled] == ["cairn.handoff.stored", "cairn.handoff.claimed"]
    assert {e["payload"]["team"] for e in polled} == {team}
    assert "billing export" not in str(polled)
