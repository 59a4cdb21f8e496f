"""Behind `api=function_url` (prod's default) CloudFront's origin is the gateway alias's Lambda
function URL: the handler gets function-URL events (payload 2.0, route `$default`, every path),
Mangum serves them, and only those carrying CloudFront's origin header reach the app."""

from __future__ import annotations

import base64
import json
import threading
from types import ModuleType
from typing import Any

import pytest

from shared.app.groups import load_groups
from shared.auth.origin import ORIGIN_HEADER
from shared.config import names
from shared.config.settings import Settings
from shared.tools.envelope import Envelope, Reply
from shared.tools.invoker import InProcessInvoker
from tests.functional.gateway_lambda import GatewayContext, issued_token
from tests.functional.test_cloudfront_origin import SECRET, entry
from tests.jsonrpc import tools_call

__all__ = ["entry"]  # the gateway entry point behind CloudFront, with its origin secret

URL_DOMAIN = "abcdefghijklmnopqrstuvwxyz012345.lambda-url.us-east-1.on.aws"


def _url_event(
    method: str,
    path: str,
    body: str | None,
    token: str | None,
    *,
    origin_header: str | None = SECRET,
    base64_body: bool = False,
) -> dict[str, Any]:
    """A Lambda function URL event as CloudFront's origin request produces it (AWS's documented
    request payload: version 2.0, route and stage `$default`, the URL's own host)."""
    headers = {
        "host": URL_DOMAIN,
        "x-forwarded-proto": "https",
        "x-forwarded-port": "443",
        "x-forwarded-for": "203.0.113.7, 130.176.0.1",
        "via": "2.0 0123456789abcdef.cloudfront.net (CloudFront)",
        "x-amz-cf-id": "Zm9vYmFyLWNsb3VkZnJvbnQtaWQ=",
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "user-agent": "claude-code",
    }
    if token:
        headers["authorization"] = f"Bearer {token}"
    if origin_header is not None:
        headers[ORIGIN_HEADER] = origin_header
    encoded = base64.b64encode(body.encode()).decode() if body and base64_body else body
    return {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": "",
        "headers": headers,
        "requestContext": {
            "accountId": "anonymous",
            "apiId": URL_DOMAIN.split(".")[0],
            "domainName": URL_DOMAIN,
            "domainPrefix": URL_DOMAIN.split(".")[0],
            "http": {
                "method": method,
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": "130.176.0.1",
                "userAgent": "Amazon CloudFront",
            },
            "requestId": "url-req-1",
            "routeKey": "$default",
            "stage": "$default",
            "time": "23/Nov/2026:20:30:00 +0000",
            "timeEpoch": 1795465800000,
        },
        "body": encoded,
        "isBase64Encoded": base64_body,
    }


def _tool_call(name: str, arguments: dict[str, Any]) -> str:
    return json.dumps(tools_call(name, arguments))


@pytest.fixture
def invoked(entry: ModuleType, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The groups run in this process; every invoke is recorded on its way."""
    groups = InProcessInvoker(load_groups(), threading.RLock())
    calls: list[str] = []

    def invoke(group: str, envelope: Envelope, *, read_only: bool) -> Reply:
        calls.append(group)
        return groups.invoke(group, envelope, read_only=read_only)

    monkeypatch.setattr(entry.invoker, "invoke", invoke)
    return calls


def test_tool_calls_arrive_as_function_url_events_and_are_answered(
    entry: ModuleType, aws: Settings, invoked: list[str]
) -> None:
    token = issued_token(aws, "admin")

    put = entry.handler(
        _url_event("POST", "/mcp", _tool_call("memory_put", {"key": "k", "content": "c"}), token),
        GatewayContext(),
    )
    # A body CloudFront forwarded base64-encoded reads the same.
    got = entry.handler(
        _url_event("POST", "/mcp", _tool_call("memory_get", {"key": "k"}), token, base64_body=True),
        GatewayContext(),
    )

    assert put["statusCode"] == 200
    assert not json.loads(put["body"])["result"].get("isError")
    assert got["statusCode"] == 200
    assert json.loads(got["body"])["result"]["structuredContent"]["memory"]["content"] == "c"
    assert invoked == [names.GROUP_MEMORY, names.GROUP_MEMORY]


def test_the_app_owns_every_path_of_the_url(entry: ModuleType, invoked: list[str]) -> None:
    # No API Gateway routes: the app answers what it does not serve (405 for GET /mcp,
    # 404 for an unknown path), and the metadata route with the public URL.
    assert (
        entry.handler(_url_event("GET", "/mcp", None, None), GatewayContext())["statusCode"] == 405
    )
    assert (
        entry.handler(_url_event("GET", "/nowhere", None, None), GatewayContext())["statusCode"]
        == 404
    )
    metadata = entry.handler(
        _url_event("GET", "/.well-known/oauth-protected-resource/mcp", None, None), GatewayContext()
    )
    assert metadata["statusCode"] == 200
    assert json.loads(metadata["body"])["resource"] == "https://d111111abcdef8.cloudfront.net/mcp"
    assert invoked == []


def test_the_public_url_without_cloudfronts_header_is_refused(
    entry: ModuleType, aws: Settings, invoked: list[str]
) -> None:
    token = issued_token(aws, "admin")
    body = _tool_call("memory_put", {"key": "k", "content": "c"})
    for header in (None, "", SECRET[:-1] + "x"):
        refused = entry.handler(
            _url_event("POST", "/mcp", body, token, origin_header=header), GatewayContext()
        )
        assert refused["statusCode"] == 403
    assert invoked == []


def test_a_toolset_url_behind_the_function_url_narrows_the_tools(
    entry: ModuleType, aws: Settings, invoked: list[str]
) -> None:
    token = issued_token(aws, "admin")
    listing = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})

    listed = entry.handler(_url_event("POST", "/mcp/hippo", listing, token), GatewayContext())
    refused = entry.handler(
        _url_event("POST", "/mcp/hippo", _tool_call("memory_get", {"key": "k"}), token),
        GatewayContext(),
    )

    assert len(json.loads(listed["body"])["result"]["tools"]) == 9
    assert json.loads(refused["body"])["error"]["code"] == -32002
    assert invoked == []
