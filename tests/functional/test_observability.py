"""Every tool call is logged with tool, team, latency and outcome, and no secret ever is."""

from __future__ import annotations

import io
import json
import logging
import re
from collections.abc import Iterator

import pytest

from shared.observability import (
    ConsoleFormatter,
    RedactingFormatter,
    logger,
    metrics,
    redact,
)
from tests.functional.conftest import Harness


def _log_lines(captured: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in captured.splitlines() if line.startswith("{")]


def _capture(formatter: logging.Formatter) -> Iterator[io.StringIO]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(formatter)
    logger.addHandler(handler)
    yield stream
    logger.removeHandler(handler)


@pytest.fixture
def log_output() -> Iterator[io.StringIO]:
    """Everything the cairn logger emits, formatted exactly as in Lambda (JSON lines)."""
    yield from _capture(RedactingFormatter())


@pytest.fixture
def console_output() -> Iterator[io.StringIO]:
    """Everything the cairn logger emits, as `cairn serve` shows it on the console."""
    yield from _capture(logger.registered_formatter)


def test_a_tool_call_logs_tool_team_latency_and_outcome(
    harness: Harness, log_output: io.StringIO
) -> None:
    token = harness.token(team="alpha")
    harness.call(token, "memory_put", {"key": "k", "content": "c"})
    calls = [
        line for line in _log_lines(log_output.getvalue()) if line.get("message") == "tool call"
    ]
    assert calls, "no tool-call log line"
    assert calls[-1]["tool"] == "memory_put"
    assert calls[-1]["team"] == "alpha"
    assert calls[-1]["outcome"] == "ok"
    assert isinstance(calls[-1]["latency_ms"], float)


def test_outside_lambda_a_tool_call_is_one_short_console_line(
    harness: Harness, console_output: io.StringIO
) -> None:
    token = harness.token(team="alpha")

    harness.call(token, "memory_put", {"key": "k", "content": "c"})

    assert isinstance(logger.registered_formatter, ConsoleFormatter)
    lines = console_output.getvalue().splitlines()
    calls = [line for line in lines if " tool " in line]
    assert len(calls) == 1, lines
    assert re.fullmatch(
        r"\d\d:\d\d:\d\d tool memory_put ok [0-9.]+ ms team=alpha request=[0-9a-f]{32}", calls[0]
    ), calls[0]


def test_outside_lambda_metrics_never_print_an_emf_blob(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AWS_LAMBDA_FUNCTION_NAME", raising=False)

    # Powertools prints the set as EMF JSON once a metric has 100 values.
    for _ in range(150):
        metrics.add_metric(name="ToolCalls", unit="Count", value=1)

    assert capsys.readouterr().out == ""


def test_inside_lambda_metrics_are_recorded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "cairn-gateway")
    try:
        metrics.add_metric(name="ToolCalls", unit="Count", value=1)
        assert metrics.provider.metric_set["ToolCalls"]["Value"] == [1.0]
    finally:
        metrics.provider.metric_set.clear()


@pytest.mark.parametrize("output", ["log_output", "console_output"])
def test_no_token_secret_reaches_a_log_line(
    harness: Harness, output: str, request: pytest.FixtureRequest
) -> None:
    log_output: io.StringIO = request.getfixturevalue(output)
    token = harness.token(team="alpha")
    # A secret can reach logging by the request path, by a careless message or by tool content.
    harness.call(token, "memory_put", {"key": "leak", "content": f"my token is {token}"})
    harness.post({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, token + "x")
    logger.info(
        f"debugging Authorization: Bearer {token}",
        extra={"header": f"Bearer {token}", "raw": token, "nested": {"list": [token]}},
    )
    try:
        raise ValueError(f"bad credential {token}")
    except ValueError:
        logger.exception("while checking %s", token)
    output = log_output.getvalue()
    assert output, "expected log output"
    assert token not in output
    assert token.removeprefix("cairn_sk_") not in output


def test_redact_masks_secrets_and_bearer_credentials() -> None:
    text = "Authorization: Bearer abc.def and cairn_sk_AAAA-bbbb_cc"
    assert redact(text) == "Authorization: Bearer [REDACTED] and cairn_sk_[REDACTED]"
