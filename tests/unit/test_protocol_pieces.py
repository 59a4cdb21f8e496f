"""Pure pieces of the protocol layer: versions, cursors, result shaping, tool descriptors."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel, Field, ValidationError

from shared.app.groups import load_catalog, tool_specs
from shared.protocol import versions
from shared.protocol.gateway import _accepts_json, _is_local_origin, _parse
from shared.protocol.jsonrpc import INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR, RpcError
from shared.protocol.tooling import (
    decode_cursor,
    encode_cursor,
    error_result,
    success_result,
)
from shared.tools.envelope import ErrorInfo
from shared.tools.validation import describe_validation_error


@pytest.mark.parametrize("requested", ["2025-03-26", "2025-06-18", "2025-11-25"])
def test_initialize_echoes_a_supported_handshake_version(requested: str) -> None:
    assert versions.negotiate_handshake(requested) == requested


@pytest.mark.parametrize("requested", ["2024-01-01", "2026-07-28", None, 7])
def test_initialize_answers_the_latest_handshake_version_otherwise(requested: object) -> None:
    assert versions.negotiate_handshake(requested) == "2025-11-25"


def test_a_cursor_round_trips_and_a_foreign_cursor_is_invalid_params() -> None:
    assert decode_cursor(encode_cursor(50)) == 50
    for bogus in ("not-a-cursor", "dG9vbHM6eA==", 12):
        with pytest.raises(RpcError) as raised:
            decode_cursor(bogus)
        assert raised.value.code == INVALID_PARAMS


def test_a_success_result_carries_structured_content_text_and_top_level_fields() -> None:
    result = success_result({"memory": None, "content": "a field named like an MCP key"})
    assert result["structuredContent"] == {
        "memory": None,
        "content": "a field named like an MCP key",
    }
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]
    assert result["memory"] is None
    assert result["isError"] is False
    assert isinstance(result["content"], list)  # the MCP key is never overwritten by a tool field


def test_an_error_result_names_the_field() -> None:
    result = error_result(
        ErrorInfo(code="invalid_argument", message="`limit` too big", field="limit")
    )
    assert result["isError"] is True
    assert result["content"][0]["text"] == "`limit` too big"
    assert result["error"]["field"] == "limit"


def test_every_tool_descriptor_has_schemas_and_all_four_annotation_hints() -> None:
    for spec in tool_specs().values():
        tool = spec.entry().descriptor  # what tools/list answers
        assert tool["name"]
        assert tool["title"]
        assert tool["description"]
        assert tool["inputSchema"]["type"] == "object"
        assert tool["outputSchema"]["type"] == "object"
        hints = tool["annotations"]
        for hint in ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"):
            assert isinstance(hints[hint], bool), (spec.name, hint)


def test_a_validation_message_names_the_field_and_what_was_given() -> None:
    class Args(BaseModel):
        limit: int = Field(le=100)

    with pytest.raises(ValidationError) as raised:
        Args.model_validate({"limit": 500})
    field, message = describe_validation_error(raised.value)
    assert field == "limit"
    assert "`limit`" in message
    assert "500" in message


@pytest.mark.parametrize(
    ("accept", "ok"),
    [
        (None, True),
        ("application/json, text/event-stream", True),
        ("*/*", True),
        ("application/*;q=0.9", True),
        ("text/html", False),
        ("text/event-stream", False),
    ],
)
def test_accept_must_admit_json(accept: str | None, ok: bool) -> None:
    assert _accepts_json(accept) is ok


@pytest.mark.parametrize(
    ("origin", "local"),
    [
        ("http://localhost:8765", True),
        ("http://127.0.0.1", True),
        ("http://[::1]:3000", True),
        ("https://evil.example", False),
        ("http://localhost.evil.example", False),
    ],
)
def test_loopback_origins_are_recognised(origin: str, local: bool) -> None:
    assert _is_local_origin(origin) is local


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b"{not json", PARSE_ERROR),
        (b"[]", INVALID_REQUEST),
        (b'"text"', INVALID_REQUEST),
        (b'{"jsonrpc": "1.0", "id": 1, "method": "ping"}', INVALID_REQUEST),
        (b'{"jsonrpc": "2.0", "id": true, "method": "ping"}', INVALID_REQUEST),
        (b'{"jsonrpc": "2.0", "id": {}, "method": "ping"}', INVALID_REQUEST),
        (b'{"jsonrpc": "2.0", "id": 1, "method": 5}', INVALID_REQUEST),
        (b'{"jsonrpc": "2.0", "id": 1}', INVALID_REQUEST),
    ],
)
def test_malformed_messages_get_the_right_json_rpc_error(body: bytes, code: int) -> None:
    with pytest.raises(RpcError) as raised:
        _parse(body)
    assert raised.value.code == code
    assert raised.value.http_status == 400


def test_bulk_and_raw_query_operations_are_never_tools() -> None:
    names = {spec.name for spec in load_catalog()}
    assert not names & {"export_all", "list_all", "query", "query(sql)", "sql"}


def test_a_base64_header_value_is_decoded_before_comparison() -> None:
    from shared.protocol.gateway import _decode_header_value

    assert _decode_header_value("=?base64?bWVtb3J5X2dldA==?=") == "memory_get"
    assert _decode_header_value("memory_get") == "memory_get"
    assert _decode_header_value("=?base64?***?=") is None
