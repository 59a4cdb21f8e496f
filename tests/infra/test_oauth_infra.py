"""The optional OAuth authorization server (`-c oauth=true`, on in the prod synth here)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from infra.config import ConfigError, DeployConfig
from infra.oauth import OAUTH_SCOPES
from shared.config import names
from tests.infra.support import Synth


def _one(synth: Synth, cfn_type: str) -> dict[str, Any]:
    found = synth.of_type(cfn_type)
    assert len(found) == 1, f"{cfn_type}: {list(found)}"
    properties: dict[str, Any] = next(iter(found.values()))["Properties"]
    return properties


def test_without_the_flag_there_is_no_user_pool(dev: Synth) -> None:
    assert not dev.of_type("AWS::Cognito::UserPool")
    gateway = dev.resources[dev.functions()["gateway"]]["Properties"]
    assert names.Env.OAUTH_ISSUER not in gateway["Environment"]["Variables"]


def test_the_user_pool_is_invitation_only_with_mfa_and_retained_in_prod(prod: Synth) -> None:
    pool = _one(prod, "AWS::Cognito::UserPool")
    assert pool["AdminCreateUserConfig"]["AllowAdminCreateUserOnly"] is True
    assert pool["MfaConfiguration"] == "ON"
    assert pool["Policies"]["PasswordPolicy"]["MinimumLength"] >= 12
    assert pool["UserPoolTier"] == "ESSENTIALS"
    assert pool["DeletionProtection"] == "ACTIVE"
    resource = next(iter(prod.of_type("AWS::Cognito::UserPool").values()))
    assert resource["DeletionPolicy"] == "Retain"


def test_the_resource_server_is_the_mcp_url_with_every_scope_but_admin(prod: Synth) -> None:
    server = _one(prod, "AWS::Cognito::UserPoolResourceServer")
    assert "mcp" in json.dumps(server["Identifier"])
    assert sorted(s["ScopeName"] for s in server["Scopes"]) == sorted(OAUTH_SCOPES)
    assert "admin" not in OAUTH_SCOPES
    assert "memory.read" in OAUTH_SCOPES


def test_the_client_is_public_code_flow_only(prod: Synth) -> None:
    client = _one(prod, "AWS::Cognito::UserPoolClient")
    assert client.get("GenerateSecret", False) is False
    assert client["AllowedOAuthFlows"] == ["code"]
    assert client["AllowedOAuthFlowsUserPoolClient"] is True
    (mcp_client, console) = client["CallbackURLs"]
    assert mcp_client == "https://claude.ai/api/mcp/auth_callback"
    assert "/console/oauth-callback" in json.dumps(console)
    assert client["EnableTokenRevocation"] is True
    assert client["PreventUserExistenceErrors"] == "ENABLED"
    assert "openid" in client["AllowedOAuthScopes"]


def test_the_gateway_trusts_the_pool_for_the_mcp_audience(prod: Synth) -> None:
    gateway = prod.resources[prod.functions()["gateway"]]["Properties"]
    variables = gateway["Environment"]["Variables"]
    assert "UserPool" in json.dumps(variables[names.Env.OAUTH_ISSUER])
    assert variables[names.Env.OAUTH_AUDIENCE]
    assert variables[names.Env.OAUTH_CLIENT_ID]
    assert "auth" in json.dumps(variables[names.Env.OAUTH_LOGIN_URL])
    outputs = prod.document["Outputs"]
    for key in (
        names.Outputs.OAUTH_ISSUER,
        names.Outputs.OAUTH_CLIENT_ID,
        names.Outputs.OAUTH_LOGIN_DOMAIN,
    ):
        assert key in outputs


@pytest.mark.parametrize(
    ("context", "message"),
    [
        ({"oauth": "true"}, "needs `oauth_callback_urls`"),
        ({"oauth": "true", "oauth_callback_urls": "http://evil.example.com/cb"}, "https://"),
    ],
)
def test_oauth_context_errors_name_the_key(context: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        DeployConfig.from_context(lambda key: {"env": "dev", "developer": "t", **context}.get(key))


def test_loopback_callbacks_may_be_plain_http() -> None:
    values = {
        "env": "dev",
        "developer": "t",
        "oauth": "true",
        "oauth_callback_urls": "http://localhost:33418/callback, https://app.example.com/cb",
    }
    config = DeployConfig.from_context(values.get)
    assert config.oauth_callback_urls == (
        "http://localhost:33418/callback",
        "https://app.example.com/cb",
    )
