"""The gateway's Lambda entry point: API Gateway (REST) proxy events through Mangum and FastAPI
to the gateway, on moto's DynamoDB — the path a deployed request takes up to the group Invoke."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest

from shared.config import names
from shared.config.settings import Settings
from tests.functional.gateway_lambda import GatewayContext, gateway_entry, issued_token

PUBLIC_URL = "https://abc123.execute-api.us-east-1.amazonaws.com/v1"


@pytest.fixture
def entry(aws: Settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """functions/gateway/handler.py imported fresh with the environment the stack gives it."""
    yield from gateway_entry(
        monkeypatch, PUBLIC_URL, **{names.Env.group_function(names.GROUP_MEMORY): "cairn-memory-fn"}
    )


def _event(method: str, path: str, body: object | None, headers: dict[str, str]) -> dict[str, Any]:
    raw = json.dumps(body) if body is not None else None
    all_headers = {
        "Host": "abc123.execute-api.us-east-1.amazonaws.com",
        "X-Forwarded-Proto": "https",
        **headers,
    }
    return {
        "resource": path,
        "path": path,
        "httpMethod": method,
        "headers": all_headers,
        "multiValueHeaders": {k: [v] for k, v in all_headers.items()},
        "queryStringParameters": None,
        "multiValueQueryStringParameters": None,
        "pathParameters": None,
        "stageVariables": None,
        "requestContext": {
            "resourcePath": path,
            "httpMethod": method,
            "path": f"/v1{path}",
            "stage": "v1",
            "requestId": "api-req-1",
            "identity": {"sourceIp": "203.0.113.7"},
        },
        "body": base64.b64encode(raw.encode()).decode() if raw else None,
        "isBase64Encoded": raw is not None,
    }


def _rpc(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}


def _mcp_headers(token: str | None) -> dict[str, str]:
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return headers


def _body(response: dict[str, Any]) -> Any:
    raw = response["body"]
    if response.get("isBase64Encoded"):
        raw = base64.b64decode(raw).decode()
    return json.loads(raw)


def test_an_initialize_event_is_answered_through_mangum(entry: ModuleType, aws: Settings) -> None:

    token = issued_token(aws, "memory")
    event = _event(
        "POST",
        "/mcp",
        _rpc(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "test", "version": "1"},
            },
        ),
        _mcp_headers(token),
    )

    response = entry.handler(event, GatewayContext())

    assert response["statusCode"] == 200
    result = _body(response)["result"]
    assert result["protocolVersion"] == "2025-06-18"
    assert result["serverInfo"]["name"] == "cairn"


def test_tools_list_through_mangum_shows_the_tokens_tools(entry: ModuleType, aws: Settings) -> None:

    token = issued_token(aws, "memory.read")

    response = entry.handler(
        _event("POST", "/mcp", _rpc("tools/list"), _mcp_headers(token)), GatewayContext()
    )

    assert response["statusCode"] == 200
    listed = {tool["name"] for tool in _body(response)["result"]["tools"]}
    assert {"memory_get", "memory_search"} <= listed
    assert "memory_put" not in listed


def test_an_unauthenticated_event_gets_401_pointing_at_the_public_metadata_url(
    entry: ModuleType,
) -> None:
    response = entry.handler(
        _event("POST", "/mcp", _rpc("ping"), _mcp_headers(None)), GatewayContext()
    )

    assert response["statusCode"] == 401
    assert _body(response)["error"]["code"] == -32001
    headers = {k.lower(): v for k, v in response["headers"].items()}
    assert headers["www-authenticate"] == (
        f'Bearer resource_metadata="{PUBLIC_URL}/.well-known/oauth-protected-resource/mcp"'
    )


def test_the_metadata_document_is_served_without_a_token(entry: ModuleType) -> None:
    response = entry.handler(
        _event("GET", "/.well-known/oauth-protected-resource", None, {}), GatewayContext()
    )

    assert response["statusCode"] == 200
    assert _body(response)["resource"] == f"{PUBLIC_URL}/mcp"


def test_the_gateway_waits_for_a_group_within_its_budget_and_never_retries(
    entry: ModuleType,
) -> None:
    from infra.functions import GATEWAY_SPEC, GROUP_SPEC

    config = entry.invoker._client.meta.config
    gateway_seconds = GATEWAY_SPEC.timeout.to_seconds()
    group_seconds = GROUP_SPEC.timeout.to_seconds()
    # API Gateway (29 s) > gateway > invoke read timeout > group: each answers inside the next.
    assert 29 > gateway_seconds > config.read_timeout > group_seconds
    assert config.retries["total_max_attempts"] == 1  # a retried call could write twice


def test_a_toolset_url_behind_api_gateway_lists_its_seeds_tools(
    entry: ModuleType, aws: Settings
) -> None:

    token = issued_token(aws, "admin")
    event = _event("POST", "/mcp/verbs", _rpc("tools/list"), _mcp_headers(token))
    event["resource"] = event["requestContext"]["resourcePath"] = "/mcp/{toolset}"
    event["pathParameters"] = {"toolset": "verbs"}

    response = entry.handler(event, GatewayContext())

    assert response["statusCode"] == 200
    assert len(_body(response)["result"]["tools"]) == 7
    metadata = entry.handler(
        _event("GET", "/.well-known/oauth-protected-resource/mcp/verbs", None, {}), GatewayContext()
    )
    assert _body(metadata)["resource"] == f"{PUBLIC_URL}/mcp/verbs"
