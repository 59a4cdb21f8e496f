"""Behind `api=cloudfront` the gateway answers only requests CloudFront forwarded: a request to
the HTTP API's own execute-api URL (no secret origin header, or a wrong one) is refused with
403 before the app runs, so it never reaches a tool, and the secret never reaches a log."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import boto3
import pytest

from shared.app.groups import load_groups
from shared.auth.origin import ORIGIN_HEADER, OriginGuard, build_origin_guard
from shared.config import names
from shared.config.settings import Settings
from shared.tools.envelope import Envelope, Reply
from shared.tools.invoker import InProcessInvoker
from tests.functional.gateway_lambda import GatewayContext, gateway_entry, issued_token
from tests.functional.test_gateway_per_request_work import _http_api_event
from tests.jsonrpc import tools_call

SECRET = "s3cr3t-origin-value-generated-at-deploy"


@pytest.fixture
def entry(
    aws: Settings, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Iterator[ModuleType]:
    """The gateway's Lambda entry point in a stack fronted by CloudFront."""
    arn = boto3.client("secretsmanager", region_name=aws.region).create_secret(
        Name="cairn-origin", SecretString=SECRET
    )["ARN"]
    yield from gateway_entry(
        monkeypatch,
        "https://d111111abcdef8.cloudfront.net",
        AWS_LAMBDA_FUNCTION_NAME="cairn-gateway",
        **{names.Env.ORIGIN_SECRET_ARN: arn},
    )
    # Metrics are disabled here, so the handler's log_metrics never flushes (and so never
    # clears) what its calls added to the process-wide metric set: leave it empty for the next
    # test, as a Lambda's flush would.
    from shared.observability import metrics

    metrics.clear_metrics()


def _call(token: str, origin_header: str | None) -> dict[str, Any]:
    body = json.dumps(tools_call("memory_put", {"key": "k", "content": "c"}))
    event = _http_api_event("POST", "/mcp", body, token)
    if origin_header is not None:
        event["headers"][ORIGIN_HEADER] = origin_header
    return event


def test_a_request_around_cloudfront_is_refused_before_any_tool_runs(
    entry: ModuleType,
    aws: Settings,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    token = issued_token(aws, "admin")
    # The groups run in this process; every invoke is recorded on its way.
    groups = InProcessInvoker(load_groups(), threading.RLock())
    invoked: list[str] = []

    def invoke(group: str, envelope: Envelope, *, read_only: bool) -> Reply:
        invoked.append(group)
        return groups.invoke(group, envelope, read_only=read_only)

    monkeypatch.setattr(entry.invoker, "invoke", invoke)

    # Straight to execute-api, with a valid team token: no header, then a wrong value.
    missing = entry.handler(_call(token, None), GatewayContext())
    wrong = entry.handler(_call(token, SECRET[:-1] + "x"), GatewayContext())
    empty = entry.handler(_call(token, ""), GatewayContext())

    for refused in (missing, wrong, empty):
        assert refused["statusCode"] == 403
        assert "CloudFront" in json.loads(refused["body"])["message"]
    assert invoked == []  # no group (so no tool) was ever invoked

    # Through CloudFront (the header it adds): the call reaches the memory group.
    passed = entry.handler(_call(token, SECRET), GatewayContext())
    assert passed["statusCode"] == 200
    assert not json.loads(passed["body"])["result"].get("isError")
    assert invoked == [names.GROUP_MEMORY]
    captured = capsys.readouterr()
    assert SECRET not in captured.out + captured.err


def test_the_metadata_route_is_behind_the_check_too(entry: ModuleType) -> None:
    event = _http_api_event("GET", "/.well-known/oauth-protected-resource/mcp", None, None)
    assert entry.handler(event, GatewayContext())["statusCode"] == 403
    event["headers"][ORIGIN_HEADER] = SECRET
    reply = entry.handler(event, GatewayContext())
    assert reply["statusCode"] == 200
    assert json.loads(reply["body"])["resource"] == "https://d111111abcdef8.cloudfront.net/mcp"


def test_the_guard_reads_header_names_in_any_case_and_needs_a_real_secret() -> None:
    guard = OriginGuard(SECRET)
    assert guard.refusal({"headers": {"X-Cairn-Origin-Verify": SECRET}}) is None
    assert guard.refusal({"headers": None}) is not None
    with pytest.raises(ValueError, match="at least 16"):
        OriginGuard("short")
    assert build_origin_guard(None, lambda arn: pytest.fail("no secret to read")) is None
