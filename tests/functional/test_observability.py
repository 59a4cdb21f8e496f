"""Every tool call is logged with tool, team, latency and outcome, and no secret ever is."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest

from shared.observability import logger, redact
from tests.functional.conftest import Harness


def _log_lines(captured: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in captured.splitlines() if line.startswith("{")]


@pytest.fixture
def log_output() -> Iterator[io.StringIO]:
    """Everything the cairn logger emits, formatted exactly as in Lambda (JSON lines)."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logger.registered_formatter)
    logger.addHandler(handler)
    yield stream
    logger.removeHandler(handler)


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


def test_no_token_secret_reaches_a_log_line(harness: Harness, log_output: io.StringIO) -> None:
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
