"""The official MCP Python SDK client, in each of its connect modes, against `cairn serve`."""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx
import pytest
from jsonschema import Draft202012Validator
from mcp.client import Client

from tests.jsonrpc import tools_call
from tests.protocol.conftest import LOOPBACK_TLS, LocalServer, mcp_headers, with_sdk_client

pytestmark = pytest.mark.protocol

MODES = ["auto", "legacy", "2026-07-28"]
HANDSHAKE_VERSIONS = ("2025-03-26", "2025-06-18", "2025-11-25")
HINTS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")


def _unique_word() -> str:
    return f"quokka{uuid.uuid4().hex[:10]}"


async def _put(client: Client, key: str, content: str) -> dict[str, Any]:
    result = await client.call_tool("memory_put", {"key": key, "content": content})
    assert not result.is_error, result.content
    memory: dict[str, Any] = result.structured_content["memory"]
    return memory


# -- Connecting ------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["auto", "2026-07-28"])
def test_the_client_negotiates_2026_07_28_in_auto_and_pinned_modes(
    server: LocalServer, mode: str
) -> None:
    async def version(client: Client) -> str | None:
        return client.protocol_version

    assert with_sdk_client(server, version, mode=mode) == "2026-07-28"


def test_the_legacy_client_negotiates_a_handshake_version(server: LocalServer) -> None:
    async def version(client: Client) -> str | None:
        return client.protocol_version

    assert with_sdk_client(server, version, mode="legacy") in HANDSHAKE_VERSIONS


# -- Listing ---------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_every_listed_tool_carries_its_schemas_and_all_four_hints(
    server: LocalServer, mode: str
) -> None:
    async def tools(client: Client) -> list[dict[str, Any]]:
        listed = await client.list_tools()
        return [tool.model_dump(by_alias=True, exclude_none=True) for tool in listed.tools]

    listed = with_sdk_client(server, tools, mode=mode)

    assert {"memory_put", "memory_get", "memory_search"} <= {tool["name"] for tool in listed}
    for tool in listed:
        for key in ("name", "title", "description"):
            value = tool.get(key)
            assert isinstance(value, str), (tool.get("name"), key)
            assert value, (tool.get("name"), key)
        assert tool["inputSchema"]["type"] == "object", tool["name"]
        assert tool["outputSchema"]["type"] == "object", tool["name"]
        hints = {hint: tool["annotations"].get(hint) for hint in HINTS}
        assert all(isinstance(value, bool) for value in hints.values()), (tool["name"], hints)


# -- Storing and finding ---------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_a_stored_memory_is_found_by_memory_search(server: LocalServer, mode: str) -> None:
    word = _unique_word()

    async def store_then_search(client: Client) -> tuple[dict[str, Any], Any]:
        stored = await _put(client, f"sdk-{word}", f"the {word} likes sunshine")
        found = await client.call_tool("memory_search", {"query": word})
        return stored, found.structured_content

    stored, found = with_sdk_client(server, store_then_search, mode=mode)

    # Hybrid ranking: other memories may follow on the vector side; the exact match leads.
    assert found["results"][0]["id"] == stored["id"]
    assert found["results"][0]["content"] == f"the {word} likes sunshine"


@pytest.mark.parametrize("mode", MODES)
def test_a_stored_memory_is_fetched_by_key(server: LocalServer, mode: str) -> None:
    key = f"sdk-{_unique_word()}"

    async def store_then_get(client: Client) -> tuple[dict[str, Any], Any]:
        stored = await _put(client, key, "fetched by key")
        fetched = await client.call_tool("memory_get", {"key": key})
        return stored, fetched.structured_content

    stored, fetched = with_sdk_client(server, store_then_get, mode=mode)

    assert fetched == {"memory": stored}


@pytest.mark.parametrize("mode", MODES)
def test_a_stored_memory_is_fetched_by_id(server: LocalServer, mode: str) -> None:
    key = f"sdk-{_unique_word()}"

    async def store_then_get(client: Client) -> tuple[dict[str, Any], Any]:
        stored = await _put(client, key, "fetched by id")
        fetched = await client.call_tool("memory_get", {"id": stored["id"]})
        return stored, fetched.structured_content

    stored, fetched = with_sdk_client(server, store_then_get, mode=mode)

    assert fetched == {"memory": stored}


# -- Result shape ----------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_structured_content_of_each_memory_tool_matches_its_output_schema(
    server: LocalServer, mode: str
) -> None:
    word = _unique_word()

    async def call_each(client: Client) -> tuple[dict[str, Any], dict[str, Any]]:
        schemas = {tool.name: tool.output_schema for tool in (await client.list_tools()).tools}
        stored = await _put(client, f"sdk-{word}", f"{word} schema check")
        outputs = {}
        for name, arguments in {
            "memory_put": {"key": f"sdk-{word}", "content": f"{word} schema check again"},
            "memory_get": {"id": stored["id"]},
            "memory_search": {"query": word},
        }.items():
            result = await client.call_tool(name, arguments)
            assert not result.is_error, (name, result.content)
            outputs[name] = result.structured_content
        return schemas, outputs

    schemas, outputs = with_sdk_client(server, call_each, mode=mode)

    for name, structured in outputs.items():
        schema = schemas[name]
        assert schema is not None, name
        validator = Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)
        errors = [error.message for error in validator.iter_errors(structured)]
        assert errors == [], (name, structured)


@pytest.mark.parametrize("mode", MODES)
def test_the_text_block_holds_the_same_json_as_structured_content(
    server: LocalServer, mode: str
) -> None:
    key = f"sdk-{_unique_word()}"

    async def put(client: Client) -> tuple[Any, list[Any]]:
        result = await client.call_tool("memory_put", {"key": key, "content": "twice told"})
        return result.structured_content, result.content

    structured, content = with_sdk_client(server, put, mode=mode)

    texts = [block.text for block in content if block.type == "text"]
    assert len(texts) == 1
    assert json.loads(texts[0]) == structured


@pytest.mark.parametrize("mode", MODES)
def test_an_out_of_range_argument_is_a_tool_error_naming_the_field(
    server: LocalServer, mode: str
) -> None:
    async def search(client: Client) -> tuple[bool, str]:
        result = await client.call_tool("memory_search", {"query": "anything", "limit": 500})
        text = " ".join(block.text for block in result.content if block.type == "text")
        return result.is_error, text

    is_error, text = with_sdk_client(server, search, mode=mode)

    assert is_error is True
    assert "limit" in text


# -- Seed 001 compatibility ------------------------------------------------------------------


def test_the_raw_result_also_carries_the_tool_fields_at_its_top_level(
    server: LocalServer,
) -> None:
    key = f"raw-{_unique_word()}"

    response = httpx.post(
        server.url,
        json=tools_call("memory_put", {"key": key, "content": "on top"}),
        headers=mcp_headers(server.dev_token),
        timeout=30,
        verify=LOOPBACK_TLS,
    )

    assert response.status_code == 200
    result = response.json()["result"]
    assert result["memory"] == result["structuredContent"]["memory"]
    assert result["memory"]["key"] == key


# -- Handoffs (seed 002) ---------------------------------------------------------------------

HANDOFF_DOCUMENT = (
    "## Start & intent\nShip the exporter.\n\n## Journey\nORM was slow.\n\n"
    "## Current state\nOne month works.\n\n## What’s left\nAll months.\n\n"
    "## Open questions\nTimezone?\n"
)


@pytest.mark.parametrize("mode", MODES)
def test_a_handoff_is_stored_listed_and_claimed_once_with_schema_valid_results(
    server: LocalServer, mode: str
) -> None:
    project = _unique_word()

    async def hand_over(client: Client) -> tuple[dict[str, Any], dict[str, Any], Any]:
        schemas = {tool.name: tool.output_schema for tool in (await client.list_tools()).tools}
        outputs: dict[str, Any] = {}
        stored = await client.call_tool(
            "store_handoff",
            {"title": "exporter", "document_md": HANDOFF_DOCUMENT, "project_key": project},
        )
        outputs["store_handoff"] = stored.structured_content
        listed = await client.call_tool("list_handoffs", {"project_key": project})
        outputs["list_handoffs"] = listed.structured_content
        handoff_id = stored.structured_content["handoff"]["id"]
        claimed = await client.call_tool("claim_handoff", {"handoff_id": handoff_id})
        outputs["claim_handoff"] = claimed.structured_content
        again = await client.call_tool("claim_handoff", {"handoff_id": handoff_id})
        return schemas, outputs, again

    schemas, outputs, again = with_sdk_client(server, hand_over, mode=mode)

    assert [h["title"] for h in outputs["list_handoffs"]["handoffs"]] == ["exporter"]
    assert outputs["claim_handoff"]["handoff"]["document_md"] == HANDOFF_DOCUMENT
    assert again.is_error
    assert "already claimed" in again.content[0].text
    for name, structured in outputs.items():
        validator = Draft202012Validator(
            schemas[name], format_checker=Draft202012Validator.FORMAT_CHECKER
        )
        assert [e.message for e in validator.iter_errors(structured)] == [], name


# -- Seven-verb memory (seed 002) ------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_remember_recall_and_flag_give_schema_valid_results(server: LocalServer, mode: str) -> None:
    word = _unique_word()

    async def verbs(client: Client) -> tuple[dict[str, Any], dict[str, Any]]:
        schemas = {tool.name: tool.output_schema for tool in (await client.list_tools()).tools}
        outputs: dict[str, Any] = {}
        remembered = await client.call_tool(
            "remember", {"title": f"{word} fact", "body": f"The {word} service runs on ARM."}
        )
        outputs["remember"] = remembered.structured_content
        recalled = await client.call_tool("recall", {"query": word, "include_ids": True})
        outputs["recall"] = recalled.structured_content
        memory_id = recalled.structured_content["memories"][0]["id"]
        flagged = await client.call_tool(
            "flag_memory", {"memory_id": memory_id, "reason": "it moved to x86"}
        )
        outputs["flag_memory"] = flagged.structured_content
        return schemas, outputs

    schemas, outputs = with_sdk_client(server, verbs, mode=mode)

    assert outputs["recall"]["memories"][0]["body"] == f"The {word} service runs on ARM."
    assert outputs["flag_memory"]["flag_count"] == 1
    for name, structured in outputs.items():
        validator = Draft202012Validator(
            schemas[name], format_checker=Draft202012Validator.FORMAT_CHECKER
        )
        assert [e.message for e in validator.iter_errors(structured)] == [], name
