"""Seed 004's allow-list contexts administered against a deployed stack (moto, the stack's
outputs through botocore's Stubber): a context token, a team's own version, unknown tools."""

from __future__ import annotations

import boto3
import pytest

from shared.auth.adapters.dynamodb import DynamoTokenStore
from shared.auth.contexts import AGENT_TOOLS
from shared.auth.service import TokenService
from shared.cli.tokens import StackAdmin, TokenAdminError
from shared.config import names
from shared.config.settings import Settings
from tests.functional.test_cli_stack import PEPPER, STACK, _cloudformation, stack_outputs

__all__ = ["stack_outputs"]  # the fixture, used by name


def test_a_stack_token_of_a_context_follows_its_teams_version(
    aws: Settings, stack_outputs: dict[str, str]
) -> None:
    admin = StackAdmin(STACK, cloudformation=_cloudformation(STACK, stack_outputs))
    secret, record = admin.create(
        {"team": "acme", "name": "hecate", "scopes": ["memory"], "context": "agent"}
    )
    table = boto3.resource("dynamodb").Table(aws.table(names.TABLE_TOKENS))
    service = TokenService(DynamoTokenStore(table), PEPPER.encode())

    preset = service.authenticate(secret)[0].allowed_tools
    view = admin.set_context({"team": "acme", "name": "agent", "tools": ["engram_get"]})
    changed = service.authenticate(secret)[0].allowed_tools
    listing = {v["name"]: v["source"] for v in admin.contexts("acme")}
    reset = admin.reset_context("acme", "agent")
    with pytest.raises(TokenAdminError, match="engram_gte"):
        admin.set_context({"team": "acme", "name": "agent", "tools": ["engram_gte"]})
    with pytest.raises(TokenAdminError, match="unknown context"):
        admin.reset_context("acme", "everything")

    assert record["context"] == "agent"
    assert preset == frozenset(AGENT_TOOLS)
    assert (view["tools"], view["source"]) == (["engram_get"], "team")
    assert changed == frozenset({"engram_get"})
    assert listing == {"agent": "team", "crossroads": "preset", "internal": "preset"}
    assert (reset["source"], sorted(reset["tools"])) == ("preset", sorted(AGENT_TOOLS))
    assert [r["name"] for r in admin.list("acme")] == ["hecate"]
