"""Streamable HTTP transport rules, checked with plain HTTP against a real `cairn serve`."""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
import pytest

from tests.protocol.conftest import LOOPBACK_TLS, LocalServer, mcp_headers

pytestmark = pytest.mark.protocol

MODERN = "2026-07-28"
HANDSHAKE_VERSIONS = ("2025-03-26", "2025-06-18", "2025-11-25")
ALL_VERSIONS = (*HANDSHAKE_VERSIONS, MODERN)
VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
ONE_MIB = 1_048_576


def _headers(server: LocalServer, **extra: str) -> dict[str, str]:
    return mcp_headers(server.dev_token, **extra)


def _post(
    server: LocalServer,
    message: Any,
    headers: dict[str, str] | None = None,
) -> httpx.Response:
    return httpx.post(
        server.url,
        content=json.dumps(message).encode(),
        headers=headers if headers is not None else _headers(server),
        timeout=30,
        verify=LOOPBACK_TLS,
    )


def _request(method: str, params: dict[str, Any] | None = None, id_: int = 1) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        message["params"] = params
    return message


def _modern_meta() -> dict[str, Any]:
    return {VERSION_KEY: MODERN, CAPABILITIES_KEY: {}}


def _modern_headers(server: LocalServer, method: str, **extra: str) -> dict[str, str]:
    return _headers(server, **{"MCP-Protocol-Version": MODERN, "Mcp-Method": method, **extra})


def _error_code(response: httpx.Response) -> int:
    code: int = response.json()["error"]["code"]
    return code


# -- HTTP methods and message kinds ---------------------------------------------------------


@pytest.mark.parametrize("method", ["GET", "DELETE"])
def test_mcp_endpoint_answers_405_to_anything_but_post(server: LocalServer, method: str) -> None:
    response = httpx.request(
        method, server.url, headers=_headers(server), timeout=30, verify=LOOPBACK_TLS
    )

    assert response.status_code == 405


def test_a_notification_is_accepted_with_202_and_an_empty_body(server: LocalServer) -> None:
    response = _post(server, {"jsonrpc": "2.0", "method": "notifications/initialized"})

    assert response.status_code == 202
    assert response.content == b""


def test_a_json_rpc_response_from_the_client_is_accepted_with_202(server: LocalServer) -> None:
    response = _post(server, {"jsonrpc": "2.0", "id": 7, "result": {}})

    assert response.status_code == 202
    assert response.content == b""


# -- Headers ---------------------------------------------------------------------------------


def test_accept_without_application_json_is_refused_with_406(server: LocalServer) -> None:
    response = _post(server, _request("ping"), _headers(server, Accept="text/html"))

    assert response.status_code == 406


def test_a_text_plain_content_type_is_refused_with_415(server: LocalServer) -> None:
    response = _post(server, _request("ping"), _headers(server, **{"Content-Type": "text/plain"}))

    assert response.status_code == 415


def test_a_foreign_origin_is_refused_with_403(server: LocalServer) -> None:
    response = _post(server, _request("ping"), _headers(server, Origin="https://evil.example"))

    assert response.status_code == 403


def test_a_foreign_host_without_origin_is_refused_with_403(server: LocalServer) -> None:
    # DNS rebinding: evil.example resolved to 127.0.0.1; a non-browser client sends no Origin.
    response = _post(server, _request("ping"), _headers(server, Host="evil.example"))

    assert response.status_code == 403


def test_a_localhost_origin_on_the_server_port_is_served(server: LocalServer) -> None:
    origin = f"http://localhost:{server.port}"

    response = _post(server, _request("ping"), _headers(server, Origin=origin))

    assert response.status_code == 200
    assert response.json()["result"] == {}


def test_a_body_larger_than_one_mebibyte_is_refused_with_413(server: LocalServer) -> None:
    message = _request("ping", {"padding": "x" * (ONE_MIB + 1)})

    response = _post(server, message)

    assert response.status_code == 413


def test_an_unsupported_protocol_version_header_is_refused_with_400(server: LocalServer) -> None:
    headers = _headers(server, **{"MCP-Protocol-Version": "1999-01-01"})

    response = _post(server, _request("tools/list"), headers)

    assert response.status_code == 400
    assert "error" in response.json()


def test_a_request_without_a_version_header_is_served_as_2025_03_26(server: LocalServer) -> None:
    response = _post(server, _request("tools/list"))

    assert response.status_code == 200
    result = response.json()["result"]
    assert isinstance(result["tools"], list)
    # A handshake-era answer: none of the 2026-07-28 envelope fields.
    assert "resultType" not in result


# -- Versions --------------------------------------------------------------------------------


@pytest.mark.parametrize("version", HANDSHAKE_VERSIONS)
def test_initialize_echoes_a_supported_handshake_version(server: LocalServer, version: str) -> None:
    params = {
        "protocolVersion": version,
        "capabilities": {},
        "clientInfo": {"name": "transport-test", "version": "0"},
    }

    response = _post(server, _request("initialize", params))

    assert response.status_code == 200
    assert response.json()["result"]["protocolVersion"] == version


def test_initialize_answers_an_unknown_version_with_2025_11_25(server: LocalServer) -> None:
    params = {
        "protocolVersion": "2099-12-31",
        "capabilities": {},
        "clientInfo": {"name": "transport-test", "version": "0"},
    }

    response = _post(server, _request("initialize", params))

    assert response.status_code == 200
    assert response.json()["result"]["protocolVersion"] == "2025-11-25"


def test_server_discover_lists_all_four_versions_as_a_complete_result(
    server: LocalServer,
) -> None:
    response = _post(
        server,
        _request("server/discover", {"_meta": _modern_meta()}),
        _modern_headers(server, "server/discover"),
    )

    assert response.status_code == 200
    result = response.json()["result"]
    assert set(ALL_VERSIONS) <= set(result["supportedVersions"])
    assert result["resultType"] == "complete"


def test_a_mcp_method_header_that_disagrees_with_the_body_gives_32020(
    server: LocalServer,
) -> None:
    response = _post(
        server,
        _request("tools/list", {"_meta": _modern_meta()}),
        _modern_headers(server, "server/discover"),
    )

    assert response.status_code < 500
    assert _error_code(response) == -32020


def test_a_2026_07_28_request_without_meta_gives_32602(server: LocalServer) -> None:
    response = _post(server, _request("tools/list", {}), _modern_headers(server, "tools/list"))

    assert response.status_code < 500
    assert _error_code(response) == -32602


def test_a_modern_tools_call_with_the_wrong_mcp_name_gives_32020(server: LocalServer) -> None:
    params = {"_meta": _modern_meta(), "name": "memory_get", "arguments": {"key": "anything"}}

    response = _post(
        server,
        _request("tools/call", params),
        _modern_headers(server, "tools/call", **{"Mcp-Name": "memory_search"}),
    )

    assert response.status_code < 500
    assert _error_code(response) == -32020


def test_a_version_header_that_disagrees_with_meta_gives_32020(server: LocalServer) -> None:
    # The header routes the request as 2026-07-28; the body claims another supported version.
    meta = {**_modern_meta(), VERSION_KEY: "2025-11-25"}
    headers = _modern_headers(server, "tools/list")

    response = _post(server, _request("tools/list", {"_meta": meta}), headers)

    assert response.status_code == 400
    assert _error_code(response) == -32020
    assert "does not match" in response.json()["error"]["message"]


def test_an_unknown_method_on_the_2026_07_28_path_gives_32601_with_http_404(
    server: LocalServer,
) -> None:
    response = _post(
        server,
        _request("resources/teleport", {"_meta": _modern_meta()}),
        _modern_headers(server, "resources/teleport"),
    )

    assert response.status_code == 404
    assert _error_code(response) == -32601


# -- Methods ---------------------------------------------------------------------------------


def test_ping_answers_an_empty_object(server: LocalServer) -> None:
    response = _post(server, _request("ping"))

    assert response.status_code == 200
    assert response.json()["result"] == {}


def test_an_unknown_method_gives_32601(server: LocalServer) -> None:
    response = _post(server, _request("resources/teleport"))

    assert response.status_code < 500
    assert _error_code(response) == -32601


def test_tools_list_pages_hold_at_most_200_tools_and_the_cursor_chain_ends(
    server: LocalServer,
) -> None:
    names: list[str] = []
    cursor: str | None = None
    for _ in range(100):
        params = {"cursor": cursor} if cursor is not None else {}
        result = _post(server, _request("tools/list", params)).json()["result"]
        page = [tool["name"] for tool in result["tools"]]
        assert len(page) <= 200
        if len(page) < 200:
            assert "nextCursor" not in result
        names.extend(page)
        cursor = result.get("nextCursor")
        if cursor is None:
            break
    else:
        pytest.fail("tools/list never stopped returning nextCursor")

    assert names
    assert len(names) == len(set(names))


def test_every_tool_comes_in_the_first_page_so_sdk_clients_cache_every_output_schema(
    server: LocalServer,
) -> None:
    # The MCP SDK client keeps output schemas from an uncursored listing only; a tool on a
    # second page made it re-list before every call to that tool.
    result = _post(server, _request("tools/list", {})).json()["result"]
    assert "nextCursor" not in result
    assert len(result["tools"]) >= 90


def test_tools_list_refuses_a_cursor_it_did_not_issue_with_32602(server: LocalServer) -> None:
    response = _post(server, _request("tools/list", {"cursor": "not-a-real-cursor"}))

    assert response.status_code < 500
    assert _error_code(response) == -32602


# -- RFC 9728 protected resource metadata ----------------------------------------------------


@pytest.mark.parametrize(
    "path",
    ["/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"],
)
def test_protected_resource_metadata_is_served_without_a_token(
    server: LocalServer, path: str
) -> None:
    response = httpx.get(f"http://127.0.0.1:{server.port}{path}", timeout=30, verify=LOOPBACK_TLS)

    assert response.status_code == 200
    assert response.json()["resource"].endswith("/mcp")


def test_a_401_points_at_the_metadata_document_in_www_authenticate(server: LocalServer) -> None:
    headers = _headers(server)
    del headers["Authorization"]

    response = _post(server, _request("ping"), headers)

    assert response.status_code == 401
    challenge = response.headers["WWW-Authenticate"]
    match = re.fullmatch(r'Bearer resource_metadata="([^"]+)"', challenge)
    assert match, challenge
    document = httpx.get(match.group(1), timeout=30, verify=LOOPBACK_TLS)
    assert document.status_code == 200
    assert document.json()["resource"] == server.url
