"""Seed 000's `token` argument: a Hoard-style client that cannot set headers authenticates a
tools/call with it, through the same checks, rate limit and log line as the header, and the
token never reaches the tool, a log line or an error message."""

from __future__ import annotations

import json
import logging
import threading

import pytest

from shared.app.groups import load_catalog, load_groups
from shared.app.toolsets import TOOLSETS
from shared.auth.service import TokenService
from shared.auth.wiring import build_token_service
from shared.config.settings import Settings
from shared.protocol.gateway import GatewayConfig, HttpReply, McpGateway
from shared.tools.envelope import Envelope, Reply
from shared.tools.invoker import InProcessInvoker
from tests.functional.conftest import Harness


class RecordingInvoker:
    """The in-process invoker, keeping every envelope a group received."""

    def __init__(self) -> None:
        self.inner = InProcessInvoker(load_groups(), threading.RLock())
        self.envelopes: list[Envelope] = []

    def invoke(self, group: str, envelope: Envelope, *, read_only: bool) -> Reply:
        self.envelopes.append(envelope)
        return self.inner.invoke(group, envelope, read_only=read_only)


@pytest.fixture
def invoker() -> RecordingInvoker:
    return RecordingInvoker()


@pytest.fixture
def gateway(aws: Settings, invoker: RecordingInvoker) -> Harness:
    tokens: TokenService = build_token_service(aws)
    gateway = McpGateway(load_catalog(), invoker, tokens, GatewayConfig(), toolsets=TOOLSETS)
    return Harness(gateway, tokens)


def _call(
    harness: Harness,
    tool: str,
    arguments: dict[str, object],
    header: str | None = None,
    toolset: str | None = None,
) -> HttpReply:
    headers = {"content-type": "application/json", "accept": "application/json"}
    if header is not None:
        headers["authorization"] = f"Bearer {header}"
    message = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }
    body = json.dumps(message).encode()
    return harness.gateway.handle_post(body, headers, "http://testserver", toolset)


def test_a_call_with_only_the_token_argument_is_authenticated_and_the_tool_never_sees_it(
    gateway: Harness, invoker: RecordingInvoker, caplog: pytest.LogCaptureFixture
) -> None:
    secret = gateway.token(scopes=("memory",))
    caplog.set_level(logging.DEBUG)

    put = _call(gateway, "memory_put", {"key": "k1", "content": "hello", "token": secret})
    got = _call(gateway, "memory_get", {"key": "k1", "token": secret})

    assert put.status == 200
    assert put.body is not None
    assert put.body["result"]["isError"] is False, put.body
    assert got.body is not None
    assert got.body["result"]["memory"]["content"] == "hello"
    assert [e.tool for e in invoker.envelopes] == ["memory_put", "memory_get"]
    assert all("token" not in e.arguments for e in invoker.envelopes)
    assert secret not in json.dumps(got.body)
    assert secret not in caplog.text
    assert "tool call" in caplog.text  # the same log line as a header call


def test_a_wrong_token_argument_is_refused_with_32001_and_not_echoed(gateway: Harness) -> None:
    wrong = "cairn_sk_not-a-token-of-this-server"

    reply = _call(gateway, "memory_get", {"key": "k1", "token": wrong})

    assert reply.status == 401
    assert reply.body is not None
    assert reply.body["id"] == 3
    assert reply.body["error"]["code"] == -32001
    assert 'error="invalid_token"' in reply.headers["WWW-Authenticate"]
    assert wrong not in json.dumps(reply.body)


def test_a_header_and_a_different_token_argument_are_refused_naming_the_conflict(
    gateway: Harness, invoker: RecordingInvoker
) -> None:
    header = gateway.token(scopes=("memory",))
    other = gateway.token(scopes=("admin",))

    reply = _call(gateway, "memory_get", {"key": "k1", "token": other}, header=header)

    assert reply.status == 400
    assert reply.body is not None
    message = reply.body["error"]["message"]
    assert reply.body["error"]["code"] == -32602
    assert "`token` argument" in message
    assert "Authorization header" in message
    assert other not in message
    assert header not in message
    assert invoker.envelopes == []


def test_the_same_token_in_the_header_and_the_argument_is_one_caller(gateway: Harness) -> None:
    secret = gateway.token(scopes=("memory",))

    reply = _call(gateway, "memory_search", {"query": "x", "token": secret}, header=secret)

    assert reply.status == 200
    assert reply.body is not None
    assert reply.body["result"]["isError"] is False


def test_the_token_argument_counts_against_the_token_rate_limit(gateway: Harness) -> None:
    secret = gateway.token(scopes=("memory",), rate_limit_per_minute=1)

    first = _call(gateway, "memory_get", {"key": "k", "token": secret})
    second = _call(gateway, "memory_get", {"key": "k", "token": secret})

    assert first.status == 200
    assert second.status == 429
    assert second.body is not None
    assert second.body["error"]["code"] == -32003


def test_the_token_argument_keeps_its_scopes_and_the_url_toolsets(gateway: Harness) -> None:
    secret = gateway.token(scopes=("memory",))

    on_hoard = _call(gateway, "memory_get", {"key": "k", "token": secret}, toolset="hoard")
    out_of_scope = _call(gateway, "search", {"query": "q", "token": secret}, toolset="hoard")
    off_toolset = _call(gateway, "remember", {"title": "t", "token": secret}, toolset="hoard")

    assert on_hoard.status == 200
    assert out_of_scope.body is not None
    assert out_of_scope.body["error"]["code"] == -32002
    assert off_toolset.body is not None
    assert off_toolset.body["error"]["code"] == -32002


def test_only_tools_call_reads_a_token_argument(gateway: Harness) -> None:
    secret = gateway.token(scopes=("memory",))
    body = json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"token": secret}}
    ).encode()
    headers = {"content-type": "application/json", "accept": "application/json"}

    reply = gateway.gateway.handle_post(body, headers, "http://testserver")

    assert reply.status == 401


def test_a_token_argument_that_is_not_a_string_is_refused_without_echo(gateway: Harness) -> None:
    reply = _call(gateway, "memory_get", {"key": "k", "token": {"secret": "s3cr3t-value"}})

    assert reply.status == 400
    assert reply.body is not None
    assert reply.body["error"]["code"] == -32602
    assert "s3cr3t-value" not in json.dumps(reply.body)
