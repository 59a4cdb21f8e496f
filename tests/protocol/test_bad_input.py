"""Malformed messages and bad tool arguments: a precise error, never a 5xx, nothing written."""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx
import pytest

from tests.protocol.conftest import LOOPBACK_TLS, LocalServer, mcp_headers

pytestmark = pytest.mark.protocol


def _post_bytes(server: LocalServer, body: bytes) -> httpx.Response:
    response = httpx.post(
        server.url,
        content=body,
        headers=mcp_headers(server.dev_token),
        timeout=30,
        verify=LOOPBACK_TLS,
    )
    assert response.status_code < 500, response.text
    return response


def _post(server: LocalServer, message: Any) -> httpx.Response:
    return _post_bytes(server, json.dumps(message).encode())


def _call(server: LocalServer, params: Any) -> httpx.Response:
    return _post(server, {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})


def _tool_result(server: LocalServer, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    response = _call(server, {"name": name, "arguments": arguments})
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()["result"]
    return result


def _error_code(response: httpx.Response) -> int:
    code: int = response.json()["error"]["code"]
    return code


def _error_text(result: dict[str, Any]) -> str:
    return " ".join(block["text"] for block in result["content"] if block["type"] == "text")


def _stored(server: LocalServer, key: str) -> Any:
    return _tool_result(server, "memory_get", {"key": key})["structuredContent"]["memory"]


def _fresh_key() -> str:
    return f"bad-input-{uuid.uuid4().hex}"


# -- Malformed JSON-RPC ----------------------------------------------------------------------


def test_malformed_json_gives_32700_with_http_400(server: LocalServer) -> None:
    response = _post_bytes(server, b'{"jsonrpc": "2.0", "id": 1, "method": ')

    assert response.status_code == 400
    assert _error_code(response) == -32700


def test_a_json_rpc_batch_gives_32600(server: LocalServer) -> None:
    response = _post(server, [{"jsonrpc": "2.0", "id": 1, "method": "ping"}])

    assert _error_code(response) == -32600


def test_a_jsonrpc_version_other_than_2_0_gives_32600(server: LocalServer) -> None:
    response = _post(server, {"jsonrpc": "1.0", "id": 1, "method": "ping"})

    assert _error_code(response) == -32600


@pytest.mark.parametrize("bad_id", [{"n": 1}, True], ids=["object", "bool"])
def test_an_id_that_is_neither_string_nor_integer_gives_32600(
    server: LocalServer, bad_id: Any
) -> None:
    response = _post(server, {"jsonrpc": "2.0", "id": bad_id, "method": "ping"})

    assert _error_code(response) == -32600


def test_params_as_a_list_gives_32602(server: LocalServer) -> None:
    response = _post(server, {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": []})

    assert _error_code(response) == -32602


# -- Malformed tools/call --------------------------------------------------------------------


def test_tools_call_without_a_name_gives_32602(server: LocalServer) -> None:
    response = _call(server, {"arguments": {"key": "x"}})

    assert _error_code(response) == -32602


def test_tools_call_with_a_name_that_is_not_a_string_gives_32602(server: LocalServer) -> None:
    response = _call(server, {"name": 42, "arguments": {"key": "x"}})

    assert _error_code(response) == -32602


def test_tools_call_of_an_unknown_tool_gives_32602(server: LocalServer) -> None:
    response = _call(server, {"name": "memory_obliterate", "arguments": {}})

    assert _error_code(response) == -32602


def test_arguments_as_a_string_give_32602_and_write_nothing(server: LocalServer) -> None:
    key = _fresh_key()

    response = _call(server, {"name": "memory_put", "arguments": json.dumps({"key": key})})

    assert _error_code(response) == -32602
    assert _stored(server, key) is None


# -- Bad tool arguments: isError naming the field, nothing written ---------------------------


@pytest.mark.parametrize(
    ("field", "value"),
    [("content", 12345), ("tags", "urgent"), ("ttl_days", "ten")],
)
def test_memory_put_with_a_wrongly_typed_argument_is_an_error_naming_it_and_writes_nothing(
    server: LocalServer, field: str, value: Any
) -> None:
    key = _fresh_key()
    arguments: dict[str, Any] = {"key": key, "content": "valid content", field: value}

    result = _tool_result(server, "memory_put", arguments)

    assert result["isError"] is True
    assert field in _error_text(result)
    assert _stored(server, key) is None


def test_memory_search_with_a_non_integer_limit_is_an_error_naming_it(
    server: LocalServer,
) -> None:
    result = _tool_result(server, "memory_search", {"query": "anything", "limit": "ten"})

    assert result["isError"] is True
    assert "limit" in _error_text(result)


def test_memory_put_without_content_is_an_error_naming_it_and_writes_nothing(
    server: LocalServer,
) -> None:
    key = _fresh_key()

    result = _tool_result(server, "memory_put", {"key": key})

    assert result["isError"] is True
    assert "content" in _error_text(result)
    assert _stored(server, key) is None


def test_memory_put_with_both_ttl_days_and_expires_at_is_an_error_and_writes_nothing(
    server: LocalServer,
) -> None:
    key = _fresh_key()
    arguments = {
        "key": key,
        "content": "both expiries",
        "ttl_days": 3,
        "expires_at": "2099-01-01T00:00:00Z",
    }

    result = _tool_result(server, "memory_put", arguments)

    assert result["isError"] is True
    text = _error_text(result)
    assert "ttl_days" in text
    assert "expires_at" in text
    assert _stored(server, key) is None


def test_memory_put_with_expires_at_in_the_past_is_an_error_and_writes_nothing(
    server: LocalServer,
) -> None:
    key = _fresh_key()
    arguments = {"key": key, "content": "already gone", "expires_at": "2001-01-01T00:00:00Z"}

    result = _tool_result(server, "memory_put", arguments)

    assert result["isError"] is True
    assert "expires_at" in _error_text(result)
    assert _stored(server, key) is None


# -- Hostile bodies (issue 18): a JSON-RPC error naming the part, never a 5xx ----------------


@pytest.mark.parametrize(
    "body",
    [b"[" * 100_000, b'{"a":' * 100_000 + b"1" + b"}" * 100_000],
    ids=["arrays", "objects"],
)
def test_a_body_nested_100000_levels_deep_gives_32700_naming_the_depth(
    server: LocalServer, body: bytes
) -> None:
    response = _post_bytes(server, body)

    assert response.status_code == 400
    assert _error_code(response) == -32700
    assert "100000 levels deep" in response.json()["error"]["message"]


@pytest.mark.parametrize(
    ("body", "part"),
    [
        (b'{"jsonrpc":"2.0","id":"\\udbf4","method":"ping"}', "`id`"),
        (b'{"jsonrpc":"2.0","id":1,"method":"pi\\ud800ng"}', "`method`"),
    ],
)
def test_a_lone_surrogate_in_the_envelope_gives_32700_naming_the_part(
    server: LocalServer, body: bytes, part: str
) -> None:
    response = _post_bytes(server, body)

    assert _error_code(response) == -32700
    assert part in response.json()["error"]["message"]


def test_a_lone_surrogate_in_a_tool_name_gives_32602_with_the_request_id(
    server: LocalServer,
) -> None:
    body = b'{"jsonrpc":"2.0","id":41,"method":"tools/call","params":{"name":"memory_\\udfff"}}'

    response = _post_bytes(server, body)

    assert _error_code(response) == -32602
    assert response.json()["id"] == 41
    assert "`params.name`" in response.json()["error"]["message"]


def test_a_lone_surrogate_in_an_argument_gives_32602_and_writes_nothing(
    server: LocalServer,
) -> None:
    key = _fresh_key()
    body = (
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"memory_put",'
        b'"arguments":{"key":"' + key.encode() + b'","content":"\\udbf4 lone"}}}'
    )

    response = _post_bytes(server, body)

    assert _error_code(response) == -32602
    assert "`params.arguments.content`" in response.json()["error"]["message"]
    assert _stored(server, key) is None


@pytest.mark.parametrize(
    ("tool", "arguments", "field"),
    [
        ("memory_put", {"content": "x", "metadata": {"": 1}}, "metadata"),
        ("memory_put", {"content": "nul \x00 inside"}, "content"),
        ("memory_put", {"content": "x", "metadata": {"n": 1e300}}, "metadata"),
    ],
)
def test_an_unstorable_argument_is_an_error_naming_it_and_writes_nothing(
    server: LocalServer, tool: str, arguments: dict[str, Any], field: str
) -> None:
    key = _fresh_key()

    result = _tool_result(server, tool, {"key": key, **arguments})

    assert result["isError"] is True
    assert result["structuredContent"]["error"]["field"] == field
    assert _stored(server, key) is None
