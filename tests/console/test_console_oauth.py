"""Console sign-in through the OAuth authorization server: authorization code + PKCE + resource,
the access token (a real RS256 JWT of the test issuer) becoming the session, and the flow's
state bound to the browser that started it. The token endpoint is the test's own: no network."""

from __future__ import annotations

import base64
import hashlib
import threading
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qs, urlsplit

import boto3
import pytest
from fastapi.testclient import TestClient

from shared.app.gateway import create_app
from shared.app.groups import load_catalog, load_groups
from shared.auth.adapters.dynamodb import DynamoTokenStore
from shared.auth.oauth import OAuthConfig, OAuthVerifier
from shared.auth.service import TokenService
from shared.config import names
from shared.config.settings import Settings
from shared.console.oauth import FLOW_COOKIE, ConsoleOAuth
from shared.protocol.gateway import McpGateway
from shared.tools.invoker import InProcessInvoker
from tests.unit.auth.test_oauth import ISSUER, RESOURCE, Issuer

LOGIN = "https://cairn-test.auth.eu-west-1.amazoncognito.com"
CALLBACK = "https://cairn.example.com/console/oauth-callback"


class AuthorizationServer:
    """Cognito's token endpoint as far as the console sees it: one code, redeemed once, only
    with the verifier whose challenge the authorization request carried."""

    def __init__(self, issuer: Issuer) -> None:
        self.issuer = issuer
        self.codes: dict[str, str] = {}  # code -> the S256 challenge it was issued for
        self.scopes = f"{RESOURCE}/memory.read {RESOURCE}/memory.write openid"

    def authorize(self, url: str) -> str:
        query = {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}
        assert url.startswith(f"{LOGIN}/oauth2/authorize?")
        assert query["code_challenge_method"] == "S256"
        assert query["resource"] == RESOURCE
        assert query["redirect_uri"] == CALLBACK
        assert f"{RESOURCE}/memory.review" in query["scope"].split()
        code = f"code-{len(self.codes)}"
        self.codes[code] = query["code_challenge"]
        return f"/console/oauth-callback?code={code}&state={query['state']}"

    def exchange(self, url: str, form: Mapping[str, str]) -> Mapping[str, Any]:
        assert url == f"{LOGIN}/oauth2/token"
        challenge = self.codes.pop(form["code"])  # a code is good once
        digest = hashlib.sha256(form["code_verifier"].encode()).digest()
        assert base64.urlsafe_b64encode(digest).decode().rstrip("=") == challenge
        return {"access_token": self.issuer.token(scope=self.scopes), "expires_in": 3600}


@pytest.fixture
def issuer() -> Issuer:
    return Issuer()


def _console(aws: Settings, issuer: Issuer, server: AuthorizationServer) -> TestClient:
    table = boto3.resource("dynamodb").Table(aws.table(names.TABLE_TOKENS))
    tokens = TokenService(DynamoTokenStore(table), b"pepper")
    verifier = OAuthVerifier(OAuthConfig(issuer=ISSUER, audience=RESOURCE), fetch=issuer.jwks)
    gateway = McpGateway(
        load_catalog(), InProcessInvoker(load_groups(), threading.RLock()), tokens, oauth=verifier
    )
    oauth = ConsoleOAuth(
        login_url=LOGIN,
        client_id="console-client",
        resource=RESOURCE,
        callback_url=CALLBACK,
        scopes=("memory.read", "memory.write", "memory.review"),
        exchange=server.exchange,
    )
    app = create_app(gateway, console_oauth=oauth)
    return TestClient(app, base_url="https://cairn.example.com")


def test_a_person_signs_in_through_the_authorization_server(aws: Settings, issuer: Issuer) -> None:
    server = AuthorizationServer(issuer)
    browser = _console(aws, issuer, server)

    login = browser.get("/console/login")
    assert 'href="oauth-start"' in login.text
    start = browser.get("/console/oauth-start", follow_redirects=False)
    assert start.status_code == 303
    flow_cookie = start.headers["set-cookie"]
    assert FLOW_COOKIE in flow_cookie
    assert "HttpOnly" in flow_cookie
    assert "SameSite=lax" in flow_cookie
    callback = browser.get(server.authorize(start.headers["location"]), follow_redirects=False)

    assert callback.status_code == 303
    assert callback.headers["location"] == "review"
    session = next(
        c for c in callback.headers.get_list("set-cookie") if c.startswith("cairn_console=")
    )
    assert "HttpOnly" in session
    assert "SameSite=strict" in session
    assert "Max-Age=3600" in session
    review = browser.get("/console/review")
    assert review.status_code == 200
    assert "Review" in review.text


def test_a_callback_this_browser_did_not_start_is_refused(aws: Settings, issuer: Issuer) -> None:
    server = AuthorizationServer(issuer)
    victim = _console(aws, issuer, server)
    attacker = _console(aws, issuer, server)
    start = attacker.get("/console/oauth-start", follow_redirects=False)
    # The attacker's code and state, delivered to a browser that never started a sign-in.
    forged = victim.get(server.authorize(start.headers["location"]), follow_redirects=False)

    assert forged.status_code == 401
    assert "did not start here" in forged.text
    assert "cairn_console=" not in forged.headers.get("set-cookie", "")


def test_a_denied_or_unusable_sign_in_is_a_clear_failure(aws: Settings, issuer: Issuer) -> None:
    server = AuthorizationServer(issuer)
    server.scopes = "openid profile"  # a token with none of cairn's scopes
    browser = _console(aws, issuer, server)

    denied = browser.get("/console/oauth-callback?error=access_denied&state=x")
    start = browser.get("/console/oauth-start", follow_redirects=False)
    unusable = browser.get(server.authorize(start.headers["location"]), follow_redirects=False)

    assert denied.status_code == 401
    assert "not completed" in denied.text
    assert unusable.status_code == 401
    assert "did not accept" in unusable.text
    assert browser.get("/console/review", follow_redirects=False).headers["location"] == "login"


def test_without_an_authorization_server_there_is_no_oauth_sign_in(console: Any) -> None:
    assert "oauth-start" not in console.client.get("/console/login").text
    assert console.client.get("/console/oauth-start").status_code == 404
