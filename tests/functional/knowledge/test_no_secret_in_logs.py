"""No secret reaches a log record (docs/knowledge.md, Redaction): the redaction test's secret
shapes go through the real local server (`cairn serve`'s runtime under uvicorn on loopback) by
every capture path, with every logger at DEBUG, and no record carries one, nor the bearer token.

Paths: the capture CLI (`record` + `flush` over HTTP), raw events on `POST /ingest/events` (a
client that does not redact), `ingest_events` over MCP, refused batches on both (errors are
where input values tend to leak), then enrichment in the server's background worker.
"""

from __future__ import annotations

import http.server
import json
import logging
import threading
import time
import traceback
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import boto3
import httpx
import pytest
import uvicorn
from fastapi.testclient import TestClient

import shared.observability  # noqa: F401 - its logger exists before the capture starts
from shared import runtime
from shared.app.gateway import build_gateway, create_app
from shared.app.wiring import build_knowledge_service
from shared.auth.models import TokenRequest
from shared.auth.wiring import build_token_service
from shared.cli import build_parser
from shared.config import names
from shared.config.settings import Settings
from shared.knowledge import capture
from shared.knowledge.adapters.sqlite import SqliteKnowledgeStores
from shared.knowledge.http import knowledge_router
from shared.local.runtime import LocalRuntime
from shared.local.server import loopback_listener
from shared.tools.invoker import LambdaInvoker
from tests.functional.knowledge.corpus import NOW_MS
from tests.functional.knowledge.test_redaction import SECRETS, raw_secret_events
from tests.jsonrpc import tools_call


class Records(logging.Handler):
    """Every record, as the text a formatter could make of any part of it (message, arguments,
    `extra` fields, exception chain, stack), taken when it is emitted."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.texts: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        parts = [repr(vars(record))]
        try:
            parts.append(record.getMessage())
        except Exception as exc:  # a bad format string is still a record to check
            parts.append(repr(exc))
        if record.exc_info and record.exc_info[1] is not None:
            parts.append("".join(traceback.format_exception(record.exc_info[1])))
        if record.stack_info:
            parts.append(record.stack_info)
        self.texts.append("\n".join(parts))


@pytest.fixture
def records() -> Iterator[Records]:
    """Every logger at DEBUG into one handler (also those that do not propagate, like the
    Powertools logger); levels and handlers are put back afterwards."""
    handler = Records()
    loggers = [logging.getLogger()] + [
        item
        for item in logging.Logger.manager.loggerDict.values()
        if isinstance(item, logging.Logger)
    ]
    saved = [(item, item.level, item.propagate, item.disabled) for item in loggers]
    for item in loggers:
        item.setLevel(logging.DEBUG)
        item.disabled = False
        if item is logging.getLogger() or not item.propagate:
            item.addHandler(handler)
    try:
        yield handler
    finally:
        for item, level, propagate, disabled in saved:
            item.setLevel(level)
            item.propagate = propagate
            item.disabled = disabled
            item.removeHandler(handler)


@dataclass
class Served:
    url: str
    local: LocalRuntime


@pytest.fixture
def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, records: Records) -> Iterator[Served]:
    # The runtime points boto3 at fake credentials; monkeypatch puts the environment back.
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION"):
        monkeypatch.setenv(key, "placeholder")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    local = LocalRuntime(tmp_path / "data")
    local.start()
    sock = loopback_listener(0)
    # log_config=None: uvicorn's records go to the root logger (captured), at DEBUG, with the
    # access log on.
    config = uvicorn.Config(
        local.app, log_config=None, log_level="debug", access_log=True, lifespan="off"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started, "uvicorn did not start"
    try:
        yield Served(f"http://127.0.0.1:{sock.getsockname()[1]}", local)
    finally:
        server.should_exit = True
        thread.join(10)
        local.stop()
        runtime.configure(Settings())


def _mcp(client: httpx.Client, token: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    reply = client.post(
        "/mcp/all",  # the generated dev token lists core at /mcp
        json=tools_call(tool, arguments),
        headers={
            "Authorization": f"Bearer {token}",
            "Accept": "application/json, text/event-stream",
        },
    )
    assert reply.status_code == 200, reply.text
    result: dict[str, Any] = reply.json()["result"]
    return result


def test_no_secret_reaches_a_log_record_on_any_capture_path(
    served: Served, records: Records, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, local = served.url, served.local
    hook_token, _ = local.issue(TokenRequest(team="local", name="hook", scopes=("ingest",)))
    agent_token = local.provision_dev_token(None).secret
    ingest_headers = {"Authorization": f"Bearer {hook_token}"}

    # The capture CLI: each secret command recorded by the hook's `record`, sent by `flush`.
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    capture.save_config(capture.CaptureConfig(url=url, token=hook_token))
    for command, _ in SECRETS.values():
        args = build_parser().parse_args(["capture", "record", "--cwd", str(tmp_path), command])
        args.run(args)
    args = build_parser().parse_args(["capture", "flush"])
    assert args.run(args) == 0
    assert capture.Queue(capture.queue_path()).size() == 0

    # Raw secrets on the hook route and over MCP: the server redacts them itself.
    client = httpx.Client(base_url=url, timeout=60)  # one client: a new one costs an SSL context
    routed = client.post(
        "/ingest/events", json={"events": raw_secret_events("r")}, headers=ingest_headers
    )
    assert routed.status_code == 200, routed.text
    assert routed.json()["redacted"] == len(SECRETS)
    called = _mcp(client, agent_token, "ingest_events", {"events": raw_secret_events("m")})
    assert called["isError"] is False, called
    assert called["structuredContent"]["redacted"] == len(SECRETS)

    # Refused batches: each secret beside a bad field, and each one too long to keep.
    for number, (command, _) in enumerate(SECRETS.values()):
        bad = {"id": f"b{number}", "source": "shell", "timestamp": NOW_MS, "command": command}
        for event in ({**bad, "exit_code": "boom"}, {**bad, "command": command * 2_000}):
            refused = client.post(
                "/ingest/events", json={"events": [event]}, headers=ingest_headers
            )
            assert refused.status_code in (400, 413), refused.text
            result = _mcp(client, agent_token, "ingest_events", {"events": [event]})
            assert result["isError"] is True, result

    # Enrichment runs in the server's background worker: wait for it, then read it back.
    build_knowledge_service().queue.drain()  # type: ignore[attr-defined]
    found = _mcp(client, agent_token, "search_events", {"limit": 100})
    assert found["isError"] is False
    client.close()

    # The capture did log (uvicorn's access lines, the gateway's tool-call lines, DEBUG ones)
    logged = "\n".join(records.texts)
    assert "/ingest/events" in logged
    assert "ingest_events" in logged
    assert any("'levelno': 10" in text for text in records.texts)
    # and no record holds a secret, the hook's token or the agent's token.
    _assert_no_secret(logged, hook_token, agent_token)


def test_a_crash_after_ingest_logs_only_redacted_text(
    served: Served, records: Records, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a store that fails and, like many a real error, quotes what it was given
    def crash(self: SqliteKnowledgeStores, team: str, events: Sequence[Any]) -> list[str]:
        raise RuntimeError(f"storage failed writing {events!r}")

    monkeypatch.setattr(SqliteKnowledgeStores, "put_new", crash)
    hook_token, _ = served.local.issue(TokenRequest(team="local", name="hook", scopes=("ingest",)))
    agent_token = served.local.provision_dev_token(None).secret
    # When raw secrets are ingested on the hook route and over MCP, both fail
    with httpx.Client(base_url=served.url, timeout=60) as client:
        routed = client.post(
            "/ingest/events",
            json={"events": raw_secret_events("r")},
            headers={"Authorization": f"Bearer {hook_token}"},
        )
        assert routed.status_code == 500
    # (a new connection: uvicorn closes the one that ended in an unhandled error)
    with httpx.Client(base_url=served.url, timeout=60) as client:
        called = client.post(
            "/mcp/all",  # the generated dev token lists core at /mcp
            json=tools_call("ingest_events", {"events": raw_secret_events("m")}),
            headers={
                "Authorization": f"Bearer {agent_token}",
                "Accept": "application/json, text/event-stream",
            },
        )
        assert "error" in called.json(), called.text
    # Then the crash is logged with its message, and the events in it are the redacted ones:
    # redaction comes before anything that can fail.
    logged = "\n".join(records.texts)
    assert logged.count("storage failed writing") >= 2
    assert "[REDACTED]" in logged
    _assert_no_secret(logged, hook_token, agent_token)


def _assert_no_secret(logged: str, *tokens: str) -> None:
    leaked = [name for name, (_, secret) in SECRETS.items() if secret in logged]
    assert leaked == []
    assert [token for token in tokens if token in logged] == []


class _FakeLambda(http.server.BaseHTTPRequestHandler):
    """Lambda's Invoke API on loopback: keeps each payload, answers a stored batch."""

    payloads: ClassVar[list[bytes]] = []

    def do_POST(self) -> None:
        self.payloads.append(self.rfile.read(int(self.headers["Content-Length"])))
        body = json.dumps({"result": {"accepted": 15, "duplicates": 0, "redacted": 15}})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args: object) -> None:
        return


def test_the_aws_gateway_forwards_raw_events_to_the_function_without_logging_them(
    tmp_path: Path, records: Records
) -> None:
    # Given the gateway as it runs in AWS: group functions reached through Lambda's Invoke API
    # (here on loopback) with the raw arguments, which the knowledge function then redacts
    settings = Settings(environment="test", storage="sqlite", token_pepper="p", data_dir=tmp_path)
    runtime.configure(settings)
    lambda_api = http.server.HTTPServer(("127.0.0.1", 0), _FakeLambda)
    threading.Thread(target=lambda_api.serve_forever, daemon=True).start()
    _FakeLambda.payloads.clear()
    try:
        client = boto3.client(
            "lambda",
            endpoint_url=f"http://127.0.0.1:{lambda_api.server_address[1]}",
            region_name="us-east-1",
            aws_access_key_id="placeholder",
            aws_secret_access_key="placeholder",
        )
        invoker = LambdaInvoker(client, {names.GROUP_KNOWLEDGE: "cairn-knowledge"})
        tokens = build_token_service(settings)
        token = tokens.issue(TokenRequest(team="alpha", name="t", scopes=("admin",))).secret
        app = create_app(build_gateway(settings, invoker, tokens, local=True))
        app.add_routes(
            lambda api: api.include_router(
                knowledge_router(
                    app.gateway,
                    lambda e: invoker.invoke(names.GROUP_KNOWLEDGE, e, read_only=False),
                )
            )
        )
        # When raw secrets arrive on the hook route and over MCP (logging at DEBUG everywhere)
        with TestClient(app, base_url="http://localhost") as web:
            headers = {"Authorization": f"Bearer {token}"}
            routed = web.post(
                "/ingest/events", json={"events": raw_secret_events("r")}, headers=headers
            )
            assert routed.status_code == 200, routed.text
            called = web.post(
                "/mcp/all",  # the generated dev token lists core at /mcp
                json=tools_call("ingest_events", {"events": raw_secret_events("m")}),
                headers={**headers, "Accept": "application/json, text/event-stream"},
            )
            assert called.json()["result"]["isError"] is False, called.text
    finally:
        lambda_api.shutdown()
        lambda_api.server_close()
        runtime.configure(Settings())
    # Then both reached the function with the secrets in them (it redacts before storing)
    assert len(_FakeLambda.payloads) == 2
    assert all(b"ghp_a1B2" in payload for payload in _FakeLambda.payloads)
    # and no log record, botocore's wire logging included, holds one
    logged = "\n".join(records.texts)
    assert "cairn-knowledge" in logged  # botocore did log the invocations
    _assert_no_secret(logged, token)
