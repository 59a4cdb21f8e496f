"""The gateway's Lambda entry point per request: a warm invocation starts no thread, and HTTP API
(payload 2.0) events are answered like REST ones."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest

from shared.bench.cost import rest_api_event
from shared.config.settings import Settings
from tests.functional.gateway_lambda import GatewayContext, gateway_entry, issued_token


@pytest.fixture
def entry(aws: Settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """functions/gateway/handler.py imported fresh, as in a Lambda container."""
    yield from gateway_entry(
        monkeypatch,
        "https://abc123.execute-api.us-east-1.amazonaws.com",
        AWS_LAMBDA_FUNCTION_NAME="cairn-gateway",
    )


def _event(method: str, token: str) -> dict[str, Any]:
    """A REST API (payload 1.0) event calling `method`, as the cost bench sends them."""
    return rest_api_event({"jsonrpc": "2.0", "id": 1, "method": method}, token)


def test_warm_invocations_start_no_thread(
    entry: ModuleType, aws: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a warm container (one request served)...
    token = issued_token(aws, "memory")
    assert entry.handler(_event("ping", token), GatewayContext())["statusCode"] == 200
    started: list[str] = []
    start = threading.Thread.start

    def counting_start(thread: threading.Thread) -> None:
        started.append(thread.name)
        start(thread)

    monkeypatch.setattr(threading.Thread, "start", counting_start)

    # When it serves more requests...
    replies = [
        entry.handler(_event(m, token), GatewayContext()) for m in ("ping", "tools/list") * 5
    ]

    # Then each is answered on the invocation's own thread: none was started for it.
    assert [r["statusCode"] for r in replies] == [200] * 10
    assert started == []


def _http_api_event(method: str, path: str, body: str | None, token: str | None) -> dict[str, Any]:
    """An HTTP API event, payload format 2.0 (what the dev stack's HTTP API sends)."""
    headers = {
        "host": "abc123.execute-api.us-east-1.amazonaws.com",
        "x-forwarded-proto": "https",
        "content-type": "application/json",
        "accept": "application/json",
    }
    if token:
        headers["authorization"] = f"Bearer {token}"
    return {
        "version": "2.0",
        "routeKey": f"{method} {path}",
        "rawPath": path,
        "rawQueryString": "",
        "headers": headers,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "abc123",
            "domainName": "abc123.execute-api.us-east-1.amazonaws.com",
            "http": {
                "method": method,
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": "203.0.113.7",
                "userAgent": "test",
            },
            "requestId": "http-req-1",
            "routeKey": f"{method} {path}",
            "stage": "$default",
        },
        "body": body,
        "isBase64Encoded": False,
    }


def test_http_api_events_are_answered_through_mangum(entry: ModuleType, aws: Settings) -> None:
    token = issued_token(aws, "memory.read")
    listing = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})

    listed = entry.handler(_http_api_event("POST", "/mcp", listing, token), GatewayContext())
    refused = entry.handler(_http_api_event("POST", "/mcp", listing, None), GatewayContext())
    metadata = entry.handler(
        _http_api_event("GET", "/.well-known/oauth-protected-resource/mcp", None, None),
        GatewayContext(),
    )
    not_allowed = entry.handler(_http_api_event("GET", "/mcp", None, token), GatewayContext())

    assert listed["statusCode"] == 200
    names_listed = {tool["name"] for tool in json.loads(listed["body"])["result"]["tools"]}
    assert "memory_get" in names_listed
    assert "memory_put" not in names_listed
    assert refused["statusCode"] == 401
    assert "resource_metadata=" in refused["headers"]["www-authenticate"]
    assert metadata["statusCode"] == 200
    assert json.loads(metadata["body"])["resource"].endswith("/mcp")
    assert not_allowed["statusCode"] == 405
