"""OAuth access tokens at the gateway, beside team tokens (JWTs signed by a test key; the JWKS
is served by the test, no network): the same Principal, the same tools, team isolation, rate
limits, RFC 9728 metadata naming the authorization server, and step-up on a missing scope."""

from __future__ import annotations

import threading

import boto3
import pytest

from shared.app.gateway import build_oauth_verifier
from shared.app.groups import load_catalog, load_groups
from shared.app.toolsets import TOOLSETS
from shared.auth.adapters.dynamodb import DynamoTokenStore
from shared.auth.models import TokenRequest
from shared.auth.oauth import OAuthConfig, OAuthVerifier
from shared.auth.service import TokenService
from shared.config import names
from shared.config.settings import Settings
from shared.protocol.gateway import McpGateway
from shared.protocol.toolsets import Toolsets
from shared.tools.invoker import InProcessInvoker
from tests.functional.conftest import Harness
from tests.unit.auth.test_oauth import ISSUER, RESOURCE, Issuer


@pytest.fixture
def issuer() -> Issuer:
    return Issuer()


def _gateway(
    settings: Settings, issuer: Issuer, rate_limit: int = 600, toolsets: Toolsets | None = None
) -> Harness:
    table = boto3.resource("dynamodb").Table(settings.table(names.TABLE_TOKENS))
    tokens = TokenService(DynamoTokenStore(table), b"pepper")
    verifier = OAuthVerifier(
        OAuthConfig(issuer=ISSUER, audience=RESOURCE, rate_limit_per_minute=rate_limit),
        fetch=issuer.jwks,
    )
    gateway = McpGateway(
        load_catalog(),
        InProcessInvoker(load_groups(), threading.RLock()),
        tokens,
        oauth=verifier,
        toolsets=toolsets,
    )
    return Harness(gateway, tokens)


def _scopes(*names: str) -> str:
    return " ".join(f"{RESOURCE}/{name}" for name in names)


def test_an_oauth_user_writes_and_reads_memory_as_its_team(aws: Settings, issuer: Issuer) -> None:
    harness = _gateway(aws, issuer)
    user = issuer.token(scope=_scopes("memory"))

    put = harness.call(user, "memory_put", {"key": "deploy", "content": "blue/green on Fridays"})
    got = harness.call(user, "memory_get", {"key": "deploy"})

    assert put["isError"] is False
    assert got["structuredContent"]["memory"]["content"] == "blue/green on Fridays"
    assert got["structuredContent"]["memory"]["created_by"] == "token:oauth:user-123"
    # A team token of the same team sees the same record; another team's does not.
    alpha = harness.token(team="alpha")
    beta = harness.token(team="beta")
    assert harness.call(alpha, "memory_get", {"key": "deploy"})["isError"] is False
    assert harness.call(beta, "memory_get", {"key": "deploy"})["structuredContent"] == {
        "memory": None
    }


def test_team_tokens_keep_working_beside_oauth(aws: Settings, issuer: Issuer) -> None:
    harness = _gateway(aws, issuer)
    secret = harness.tokens.issue(TokenRequest(team="alpha", name="t", scopes=("memory",))).secret
    assert harness.call(secret, "memory_put", {"key": "k", "content": "c"})["isError"] is False


def test_a_refused_jwt_is_401_with_invalid_token_and_the_metadata_url(
    aws: Settings, issuer: Issuer
) -> None:
    harness = _gateway(aws, issuer)
    stranger = issuer.token(aud="https://another-server.example.com/mcp")

    reply = harness.post({"jsonrpc": "2.0", "id": 1, "method": "ping"}, stranger)

    assert reply.status == 401
    challenge = reply.headers["WWW-Authenticate"]
    assert 'error="invalid_token"' in challenge
    assert "/.well-known/oauth-protected-resource/mcp" in challenge


def test_a_missing_scope_asks_the_oauth_client_to_step_up(aws: Settings, issuer: Issuer) -> None:
    harness = _gateway(aws, issuer)
    reader = issuer.token(scope=_scopes("memory.read"))
    message = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {"name": "memory_put", "arguments": {"key": "k", "content": "c"}},
    }

    reply = harness.post(message, reader)

    assert reply.status == 403
    assert reply.body is not None
    assert reply.body["error"]["code"] == -32002
    challenge = reply.headers["WWW-Authenticate"]
    assert 'error="insufficient_scope"' in challenge
    assert f'scope="{RESOURCE}/memory.write"' in challenge
    assert (
        'resource_metadata="https://cairn.example.com/.well-known/oauth-protected-resource/mcp"'
        in (challenge)
    )
    # A team token missing a scope gets the same error and no OAuth challenge.
    team_reader = harness.token(scopes=("memory.read",))
    assert "WWW-Authenticate" not in harness.post(message, team_reader).headers


def test_oauth_callers_are_rate_limited_per_subject(aws: Settings, issuer: Issuer) -> None:
    harness = _gateway(aws, issuer, rate_limit=3)
    user = issuer.token()
    statuses = [
        harness.post({"jsonrpc": "2.0", "id": n, "method": "ping"}, user).status for n in range(4)
    ]
    assert statuses == [200, 200, 200, 429]
    other = issuer.token(sub="user-456")
    assert harness.post({"jsonrpc": "2.0", "id": 9, "method": "ping"}, other).status == 200


def test_metadata_names_the_authorization_server_and_its_scope_names(
    aws: Settings, issuer: Issuer
) -> None:
    metadata = _gateway(aws, issuer).gateway.protected_resource_metadata("http://testserver")

    assert metadata["authorization_servers"] == [ISSUER]
    assert f"{RESOURCE}/memory.read" in metadata["scopes_supported"]
    assert all(scope.startswith(f"{RESOURCE}/") for scope in metadata["scopes_supported"])


def test_settings_build_the_verifier_bound_to_the_public_resource_url() -> None:
    assert build_oauth_verifier(Settings()) is None
    env = {"CAIRN_OAUTH_ISSUER": ISSUER, "CAIRN_PUBLIC_URL": "https://cairn.example.com/"}
    verifier = build_oauth_verifier(Settings.from_env(env))
    assert verifier is not None
    assert verifier.config.audience == RESOURCE
    assert verifier.config.jwks == f"{ISSUER}/.well-known/jwks.json"
    with pytest.raises(ValueError, match="audience"):
        build_oauth_verifier(Settings.from_env({"CAIRN_OAUTH_ISSUER": ISSUER}))


def test_settings_give_the_console_its_oauth_sign_in_only_when_complete() -> None:
    from shared.app.gateway import build_console_oauth

    env = {
        "CAIRN_OAUTH_ISSUER": ISSUER,
        "CAIRN_PUBLIC_URL": "https://cairn.example.com/",
        "CAIRN_OAUTH_LOGIN_URL": "https://cairn.auth.eu-west-1.amazoncognito.com",
        "CAIRN_OAUTH_CLIENT_ID": "abc",
    }
    console = build_console_oauth(Settings.from_env(env))
    assert console is not None
    assert console.resource == RESOURCE
    assert console.callback_url == "https://cairn.example.com/console/oauth-callback"
    assert "memory.review" in console.scopes
    assert "admin" not in console.scopes
    without_client = {k: v for k, v in env.items() if k != "CAIRN_OAUTH_CLIENT_ID"}
    assert build_console_oauth(Settings.from_env(without_client)) is None


def test_an_oauth_token_bound_to_a_toolset_url_works_there_and_only_there(
    aws: Settings, issuer: Issuer
) -> None:
    harness = _gateway(aws, issuer, toolsets=TOOLSETS)
    bound = issuer.token(scope=_scopes("memory"), aud=f"{RESOURCE}/memory")
    body = b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}'
    headers = {
        "content-type": "application/json",
        "authorization": f"Bearer {bound}",
    }

    there = harness.gateway.handle_post(body, headers, "http://testserver", "memory")
    elsewhere = harness.gateway.handle_post(body, headers, "http://testserver", "search")
    bare = harness.gateway.handle_post(body, headers, "http://testserver")

    assert there.status == 200
    assert there.body is not None
    assert {tool["name"] for tool in there.body["result"]["tools"]} == {
        "recall",
        "remember",
        "flag_memory",
        "memory_put",
        "memory_get",
        "memory_search",
    }
    assert elsewhere.status == 401
    assert bare.status == 401
