"""Gateway rules checked in-process (no socket): token expiry, auth messages, tool-list paging,
oversized writes, and the annotations chosen for each memory tool."""

from __future__ import annotations

import json
import threading
import time

import boto3
import pytest

from shared.app.groups import load_catalog, load_groups
from shared.auth.adapters.dynamodb import DynamoTokenStore
from shared.auth.models import TokenRequest
from shared.auth.service import TokenService
from shared.config import names
from shared.config.settings import Settings
from shared.memory.models import MAX_CONTENT_CHARS
from shared.protocol.gateway import (
    DEFAULT_MAX_BODY_BYTES,
    HOW_TO_AUTHENTICATE,
    GatewayConfig,
    McpGateway,
)
from shared.tools.invoker import InProcessInvoker
from tests.functional.conftest import Harness
from tests.jsonrpc import tools_call


def _gateway(settings: Settings, clock: list[float], page_size: int = 50) -> Harness:
    table = boto3.resource("dynamodb").Table(settings.table(names.TABLE_TOKENS))
    tokens = TokenService(DynamoTokenStore(table), b"pepper", clock=lambda: clock[0])
    gateway = McpGateway(
        load_catalog(),
        InProcessInvoker(load_groups(), threading.RLock()),
        tokens,
        GatewayConfig(tools_page_size=page_size),
    )
    return Harness(gateway, tokens)


def _ping(harness: Harness, token: str) -> tuple[int, dict[str, object]]:
    reply = harness.post({"jsonrpc": "2.0", "id": 7, "method": "ping"}, token)
    assert reply.body is not None
    return reply.status, reply.body


def test_an_expired_token_is_refused_with_32001_http_401_and_the_seed_message(
    aws: Settings,
) -> None:
    clock = [time.time()]
    harness = _gateway(aws, clock)
    secret = harness.tokens.issue(
        TokenRequest(team="alpha", name="short-lived", scopes=("memory",), expires_days=1)
    ).secret
    assert _ping(harness, secret)[0] == 200

    clock[0] += 86_400 + 1
    reply = harness.post({"jsonrpc": "2.0", "id": 7, "method": "ping"}, secret)

    assert reply.status == 401
    assert reply.body is not None
    assert reply.body["id"] == 7
    assert reply.body["error"] == {
        "code": -32001,
        "message": "Invalid or missing authentication token",
        "data": {"how": HOW_TO_AUTHENTICATE},
    }
    assert "Authorization: Bearer" in HOW_TO_AUTHENTICATE
    assert reply.headers["WWW-Authenticate"].startswith('Bearer resource_metadata="')


def test_tools_list_pages_follow_the_cursor_chain_without_gaps_or_repeats(aws: Settings) -> None:
    harness = _gateway(aws, [time.time()], page_size=3)
    token = harness.token()
    expected = [spec.name for spec in load_catalog()]
    assert len(expected) > 3, "paging needs more tools than one page"

    listed: list[str] = []
    cursor: str | None = None
    pages = 0
    while True:
        params = {"cursor": cursor} if cursor is not None else {}
        reply = harness.post(
            {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": params}, token
        )
        assert reply.body is not None
        result = reply.body["result"]
        assert len(result["tools"]) <= 3
        listed += [tool["name"] for tool in result["tools"]]
        pages += 1
        cursor = result.get("nextCursor")
        if cursor is None:
            break

    assert listed == expected
    assert pages == -(-len(expected) // 3)


def test_an_oversized_memory_put_is_refused_with_413_and_writes_nothing(harness: Harness) -> None:
    token = harness.token()
    content = "x" * (DEFAULT_MAX_BODY_BYTES + 1)
    message = tools_call("memory_put", {"key": "huge", "content": content})

    reply = harness.post(json.dumps(message).encode(), token)

    assert reply.status == 413
    assert reply.body is not None
    assert reply.body["error"]["code"] == -32600
    assert harness.call(token, "memory_get", {"key": "huge"})["memory"] is None


def test_content_over_the_limit_is_a_tool_error_naming_content_and_writes_nothing(
    harness: Harness,
) -> None:
    token = harness.token()

    result = harness.call(
        token, "memory_put", {"key": "long", "content": "y" * (MAX_CONTENT_CHARS + 1)}
    )

    assert result["isError"] is True
    text = result["content"][0]["text"]
    assert "content" in text
    assert harness.call(token, "memory_get", {"key": "long"})["memory"] is None


@pytest.mark.parametrize(
    ("tool", "hints"),
    [
        # memory_put replaces what a key held (destructive); the same call twice, same state.
        ("memory_put", (False, True, True, False)),
        ("memory_get", (True, False, True, False)),
        ("memory_search", (True, False, True, False)),
    ],
)
def test_each_memory_tool_declares_the_annotations_chosen_for_it(
    harness: Harness, tool: str, hints: tuple[bool, bool, bool, bool]
) -> None:
    token = harness.token()
    reply = harness.post({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, token)
    assert reply.body is not None
    listed = {t["name"]: t for t in reply.body["result"]["tools"]}

    annotations = listed[tool]["annotations"]

    assert (
        annotations["readOnlyHint"],
        annotations["destructiveHint"],
        annotations["idempotentHint"],
        annotations["openWorldHint"],
    ) == hints
