"""Per-request work of the gateway's Lambda entry point: a warm invocation starts no thread."""

from __future__ import annotations

import importlib
import json
import sys
import threading
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest

from shared.auth.models import TokenRequest
from shared.auth.wiring import build_token_service
from shared.config import names
from shared.config.settings import Settings
from tests.functional.conftest import PEPPER


class _Context:
    function_name = "cairn-gateway"
    memory_limit_in_mb = 1024
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:cairn-gateway"
    aws_request_id = "gw-req-1"

    @staticmethod
    def get_remaining_time_in_millis() -> int:
        return 30_000


@pytest.fixture
def entry(aws: Settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """functions/gateway/handler.py imported fresh, as in a Lambda container."""
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "cairn-gateway")
    monkeypatch.setenv(names.Env.ENVIRONMENT, "test")
    monkeypatch.setenv(names.Env.TOKEN_PEPPER, PEPPER)
    monkeypatch.setenv(names.Env.PUBLIC_URL, "https://abc123.execute-api.us-east-1.amazonaws.com")
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "true")
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    sys.modules.pop("functions.gateway.handler", None)
    yield importlib.import_module("functions.gateway.handler")
    sys.modules.pop("functions.gateway.handler", None)


def _event(method: str, token: str) -> dict[str, Any]:
    headers = {
        "Host": "abc123.execute-api.us-east-1.amazonaws.com",
        "X-Forwarded-Proto": "https",
        "Content-Type": "application/json",
        "Accept": "application/json",
        "Authorization": f"Bearer {token}",
    }
    return {
        "resource": "/mcp",
        "path": "/mcp",
        "httpMethod": "POST",
        "headers": headers,
        "multiValueHeaders": {k: [v] for k, v in headers.items()},
        "queryStringParameters": None,
        "multiValueQueryStringParameters": None,
        "pathParameters": None,
        "stageVariables": None,
        "requestContext": {"requestId": "r", "identity": {"sourceIp": "203.0.113.7"}},
        "body": json.dumps({"jsonrpc": "2.0", "id": 1, "method": method}),
        "isBase64Encoded": False,
    }


def test_warm_invocations_start_no_thread(
    entry: ModuleType, aws: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a warm container (one request served)...
    token = (
        build_token_service(aws)
        .issue(TokenRequest(team="alpha", name="t", scopes=("memory",)))
        .secret
    )
    assert entry.handler(_event("ping", token), _Context())["statusCode"] == 200
    started: list[str] = []
    start = threading.Thread.start

    def counting_start(thread: threading.Thread) -> None:
        started.append(thread.name)
        start(thread)

    monkeypatch.setattr(threading.Thread, "start", counting_start)

    # When it serves more requests...
    replies = [entry.handler(_event(m, token), _Context()) for m in ("ping", "tools/list") * 5]

    # Then each is answered on the invocation's own thread: none was started for it.
    assert [r["statusCode"] for r in replies] == [200] * 10
    assert started == []
