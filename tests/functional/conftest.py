"""Functional tests: real adapters against moto, tables made from the CDK's definitions."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto.core.botocore_stubber import BotocoreStubber

from shared import runtime
from shared.app.groups import load_catalog, load_groups
from shared.auth.models import TokenRequest
from shared.auth.principal import Principal
from shared.auth.service import TokenService
from shared.auth.wiring import build_token_service
from shared.config.settings import Settings
from shared.local.runtime import LocalRuntime
from shared.protocol.gateway import GatewayConfig, HttpReply, McpGateway
from shared.tools.invoker import InProcessInvoker
from tests.fake_aws import fake_aws
from tests.jsonrpc import tools_call

PEPPER = "functional-test-pepper"


def answer_one_call_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make moto answer each AWS call alone, as one DynamoDB request is atomic.

    moto keeps tables in dicts without locks. A TransactWriteItems deep-copies every table it
    touches and, when a condition fails, puts the copies back, erasing what another thread
    wrote meanwhile. The harness's background detection thread met that: its finding, refused
    as a repeat, took back a memory the request thread had just written and acknowledged (the
    console review test lost a duplicate pair under load). One lock per call gives moto a
    single call's atomicity and nothing more; cairn's own concurrency is tested on SQLite and
    left to DynamoDB in AWS.
    """
    lock = threading.RLock()
    process = BotocoreStubber.process_request

    def alone(self: BotocoreStubber, request: object) -> object:
        with lock:
            return process(self, request)  # type: ignore[arg-type]

    monkeypatch.setattr(BotocoreStubber, "process_request", alone)


@pytest.fixture
def aws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Settings]:
    """moto for every AWS API, the tables created, runtime wired to them (index in tmp_path)."""
    answer_one_call_at_a_time(monkeypatch)
    settings = Settings(environment="test", token_pepper=PEPPER, data_dir=tmp_path)
    with on_storage(settings):
        yield settings


@contextlib.contextmanager
def on_storage(settings: Settings) -> Iterator[Settings]:
    """`runtime` wired to `settings` while the block runs, on its `storage`: fresh moto tables
    (with every other AWS API on moto) for `dynamodb`, the data folder's database for `sqlite`."""
    guard = fake_aws(region=settings.region) if settings.storage == "dynamodb" else None
    with guard or contextlib.nullcontext():
        runtime.configure(settings)
        try:
            yield settings
        finally:
            runtime.configure(Settings())


@dataclass
class Harness:
    """The gateway in-process (no socket) with helpers to call it like a client would."""

    gateway: McpGateway
    tokens: TokenService

    def token(
        self, team: str = "alpha", scopes: tuple[str, ...] = ("admin",), **extra: object
    ) -> str:
        request = TokenRequest.model_validate(
            {"team": team, "name": "t", "scopes": scopes, **extra}
        )
        return self.tokens.issue(request).secret

    def post(self, message: object, token: str | None, **headers: str) -> HttpReply:
        import json

        all_headers = {
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            **{k.lower().replace("_", "-"): v for k, v in headers.items()},
        }
        if token is not None:
            all_headers["authorization"] = f"Bearer {token}"
        body = message if isinstance(message, bytes) else json.dumps(message).encode()
        return self.gateway.handle_post(body, all_headers, "http://testserver")

    @classmethod
    def over(cls, settings: Settings) -> Harness:
        """The gateway over `runtime`'s stores (`runtime.configure(settings)` done first)."""
        invoker = InProcessInvoker(load_groups(), threading.RLock())
        tokens = build_token_service(settings)
        gateway = McpGateway(
            load_catalog(), invoker, tokens, GatewayConfig(allow_localhost_origins=True)
        )
        return cls(gateway, tokens)

    def call(self, token: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        reply = self.post(
            tools_call(tool, arguments),
            token,
        )
        assert reply.status == 200, reply.body
        assert reply.body is not None
        assert "result" in reply.body, reply.body
        result: dict[str, Any] = reply.body["result"]
        return result


def no_error(result: dict[str, Any]) -> dict[str, Any]:
    """A tool call's result that must be a success (`isError` false), passed on."""
    assert result["isError"] is False, result
    return result


def ok(harness: Harness, token: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """`harness.call` that must succeed: its result, with `isError` false."""
    return no_error(harness.call(token, tool, arguments))


@pytest.fixture
def bucket(aws: Settings) -> str:
    """The artifacts bucket, made on moto's S3."""
    boto3.client("s3", region_name=aws.region).create_bucket(Bucket=aws.artifacts_bucket)
    return aws.artifacts_bucket


def admin_agent(name: str, team: str = "alpha") -> Principal:
    """An admin token's principal acting as the agent `name`, for the services called directly."""
    return Principal(
        team=team,
        token_id=f"tok_{name}",
        token_name=name,
        scopes=frozenset({"admin"}),
        agent_id=name,
    )


@pytest.fixture
def harness(aws: Settings) -> Harness:
    return Harness.over(aws)


@contextlib.contextmanager
def local_runtime(data_dir: Path) -> Iterator[LocalRuntime]:
    """A started local runtime on `data_dir`, stopped (and the settings reset) afterwards."""
    started = LocalRuntime(data_dir)
    started.start()
    try:
        yield started
    finally:
        started.stop()
        runtime.configure(Settings())
