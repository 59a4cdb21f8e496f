"""Seed 000's ten advanced memory tools through the official MCP SDK client against `cairn serve`
(SQLite stores, the embedded index, detection on the local background worker)."""

from __future__ import annotations

import uuid
from typing import Any

import anyio
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from shared.app.toolsets import TOOLSETS
from tests.protocol.conftest import LocalServer, mcp_http_client, sdk_call

pytestmark = pytest.mark.protocol

# The structured-memory toolset: the ten tools of the memory lifecycle.
TOOLS = TOOLSETS.select("structured-memory") or frozenset()


async def _found(client: Client, tool: str, member: str) -> dict[str, Any]:
    """The open finding naming `member`, once the background worker has recorded it."""
    with anyio.fail_after(60):
        while True:
            items = (await sdk_call(client, tool, {"limit": 100}))["items"]
            for item in items:
                if member in item["finding"]["members"]:
                    found: dict[str, Any] = item["finding"]
                    return found
            await anyio.sleep(0.2)


def test_the_ten_advanced_memory_tools_through_the_sdk_client(server: LocalServer) -> None:
    team = f"sdk-{uuid.uuid4().hex[:8]}"
    writer = server.create_token(team, "memory,search")
    reviewer = server.create_token(team, "memory,memory.review")
    subject = f"gateway port {uuid.uuid4().hex[:6]}"

    async def connect(token: str) -> tuple[Any, Client]:
        http = mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        return http, Client(streamable_http_client(server.url, http_client=http))

    async def main() -> None:
        http, client = await connect(writer)
        rhttp, review_client = await connect(reviewer)
        async with http, rhttp, client, review_client:
            listed = {t.name: t for t in (await client.list_tools()).tools}
            # The writer lacks memory.review: memory_review is not listed for it.
            assert len(TOOLS) == 10
            assert TOOLS - {"memory_review"} <= set(listed)
            assert "memory_review" not in listed
            assert "memory_review" in {t.name for t in (await review_client.list_tools()).tools}
            assert listed["memory_query"].annotations.read_only_hint is True  # type: ignore[union-attr]
            assert listed["memory_retract"].annotations.destructive_hint is True  # type: ignore[union-attr]

            first = (
                await sdk_call(
                    client,
                    "memory_write",
                    {"content": "The gateway listens on port 8080.", "subject": subject},
                )
            )["memory"]
            second = (
                await sdk_call(
                    client,
                    "memory_write",
                    {"content": "The gateway listens on port 9090.", "subject": subject},
                )
            )["memory"]
            conflict = await _found(client, "conflicts_list", second["id"])
            assert set(conflict["members"]) == {first["id"], second["id"]}
            resolved = await sdk_call(
                client,
                "conflict_resolve",
                {"id": conflict["id"], "action": "keep", "keep_id": second["id"]},
            )
            assert resolved["finding"]["status"] == "resolved"

            moved = await sdk_call(
                client,
                "memory_supersede",
                {"id": second["id"], "content": "The gateway listens on port 8443."},
            )
            assert moved["superseded"]["superseded_by"] == moved["memory"]["id"]
            chain = await sdk_call(client, "memory_query", {"versions_of": moved["memory"]["id"]})
            assert [m["id"] for m in chain["memories"]] == [second["id"], moved["memory"]["id"]]

            proposal = (
                await sdk_call(client, "memory_propose", {"content": "Staging uses port 8081."})
            )["memory"]
            assert proposal["status"] == "proposed"
            decided = await sdk_call(
                review_client, "memory_review", {"ids": [proposal["id"]], "decision": "approve"}
            )
            assert decided["results"][0]["decided"] is True

            copy = "Certificates are renewed by cert-manager every 60 days."
            one = (await sdk_call(client, "memory_write", {"content": copy}))["memory"]
            two = (await sdk_call(client, "memory_write", {"content": copy}))["memory"]
            cluster = await _found(client, "duplicates_list", two["id"])
            assert set(cluster["members"]) == {one["id"], two["id"]}
            merged = await sdk_call(
                client, "duplicate_resolve", {"id": cluster["id"], "action": "merge"}
            )
            assert merged["memories"][0]["merged_from"] == [two["id"]]

            retracted = await sdk_call(
                client, "memory_retract", {"id": moved["memory"]["id"], "reason": "reverted"}
            )
            assert retracted["memory"]["status"] == "retracted"
            active = await sdk_call(client, "memory_query", {"subject": subject})
            assert active["memories"] == []
            hits = await sdk_call(
                client, "search", {"query": "gateway port 8443", "types": ["memory"]}
            )
            # `search` names a hit by `entity_id` (an `id` key would make this vacuous).
            assert all("entity_id" in h for h in hits["results"])
            assert moved["memory"]["id"] not in {h["entity_id"] for h in hits["results"]}
            recalled = await sdk_call(
                client, "recall", {"query": "gateway port 8443", "include_ids": True}
            )
            assert moved["memory"]["id"] not in {m["id"] for m in recalled["memories"]}

    anyio.run(main)
