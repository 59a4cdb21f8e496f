"""The gateway's Lambda entry point as a container runs it: a Lambda context, and
functions/gateway/handler.py imported fresh with the environment the stack gives it."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from types import ModuleType

import pytest

from shared.auth.models import TokenRequest
from shared.auth.wiring import build_token_service
from shared.config import names
from shared.config.settings import Settings
from tests.functional.conftest import PEPPER


class GatewayContext:
    function_name = "cairn-gateway"
    memory_limit_in_mb = 1024
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:cairn-gateway"
    aws_request_id = "gw-req-1"

    @staticmethod
    def get_remaining_time_in_millis() -> int:
        return 30_000


def gateway_entry(
    monkeypatch: pytest.MonkeyPatch, public_url: str, **env: str
) -> Iterator[ModuleType]:
    """For a fixture to yield from: the handler module, imported with `public_url`, the test
    pepper, tracing and metrics off, and `env` besides; dropped again afterwards."""
    monkeypatch.setenv(names.Env.ENVIRONMENT, "test")
    monkeypatch.setenv(names.Env.TOKEN_PEPPER, PEPPER)
    monkeypatch.setenv(names.Env.PUBLIC_URL, public_url)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "true")
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    sys.modules.pop("functions.gateway.handler", None)
    yield importlib.import_module("functions.gateway.handler")
    sys.modules.pop("functions.gateway.handler", None)


def issued_token(aws: Settings, *scopes: str, name: str = "t") -> str:
    """The secret of a new team-alpha token with `scopes`, issued on `aws`'s token store."""
    return (
        build_token_service(aws).issue(TokenRequest(team="alpha", name=name, scopes=scopes)).secret
    )
