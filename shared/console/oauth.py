"""Console sign-in through the OAuth authorization server (AWS with `-c oauth=true`).

The console is a public OAuth client of the same Cognito pool MCP clients use: authorization
code with PKCE (S256) and RFC 8707's `resource` = the MCP URL, so the access token it gets is
exactly one the gateway accepts (`shared.auth.oauth`). The token becomes the session cookie in
place of a team token (HttpOnly, SameSite=Strict, no longer than the token lives); every page
then calls the tools with it, as any MCP client would.

The state and the PKCE verifier travel in a short-lived cookie of their own. It must be
SameSite=Lax: the authorization server sends the browser back with a cross-site top-level
navigation, on which Strict cookies are not sent.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

FLOW_COOKIE: Final = "cairn_console_oauth"
FLOW_MAX_AGE: Final = 600

TokenExchange = Callable[[str, Mapping[str, str]], Mapping[str, Any]]


class SignInFailed(Exception):
    """The authorization server's answer cannot become a session; the message is for people."""


def post_form(url: str, form: Mapping[str, str]) -> Mapping[str, Any]:
    """POST `form` to the authorization server's token endpoint (HTTPS only)."""
    if not url.startswith("https://"):
        raise SignInFailed("the authorization server must be reached over HTTPS")
    request = urllib.request.Request(  # noqa: S310 - https only, checked above
        url,
        data=urllib.parse.urlencode(form).encode(),
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
            answer: Mapping[str, Any] = json.loads(response.read(1_000_000))
    except Exception as exc:  # HTTP error, network, JSON: the sign-in cannot finish
        raise SignInFailed("the authorization server did not issue a token") from exc
    return answer


def _challenge(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).decode("ascii").rstrip("=")


@dataclass(frozen=True)
class ConsoleOAuth:
    """The console's client of the authorization server."""

    login_url: str  # the hosted login's base URL (Cognito: https://<domain>.auth.<region>…)
    client_id: str
    resource: str  # the MCP URL: the audience the gateway requires
    callback_url: str  # <public URL>/console/oauth-callback, registered on the client
    # cairn's scopes to ask for (the wiring passes every one but admin: administration stays
    # with team tokens and the CLI); the console imports nothing but the gateway.
    scopes: tuple[str, ...] = ()
    exchange: TokenExchange = field(default=post_form, compare=False)

    def start(self) -> tuple[str, str]:
        """The authorization URL to send the browser to, and the flow cookie's value."""
        state = secrets.token_urlsafe(24)
        verifier = secrets.token_urlsafe(64)
        prefix = self.resource.rstrip("/") + "/"
        query = urllib.parse.urlencode(
            {
                "response_type": "code",
                "client_id": self.client_id,
                "redirect_uri": self.callback_url,
                "scope": " ".join(["openid", *(prefix + scope for scope in self.scopes)]),
                "state": state,
                "code_challenge": _challenge(verifier),
                "code_challenge_method": "S256",
                "resource": self.resource,
            }
        )
        return f"{self.login_url.rstrip('/')}/oauth2/authorize?{query}", f"{state}.{verifier}"

    def finish(
        self, flow_cookie: str | None, state: str | None, code: str | None
    ) -> tuple[str, int]:
        """Redeem the authorization code: the access token and its lifetime in seconds.

        The returned `state` must be the one this browser's flow cookie holds (a sign-in cannot
        be started by another site and finished here).
        """
        expected, _, verifier = (flow_cookie or "").partition(".")
        if not (expected and verifier and state and hmac.compare_digest(expected, state)):
            raise SignInFailed("the sign-in did not start here, or took too long: start again")
        if not code:
            raise SignInFailed("the authorization server sent no code: start again")
        answer = self.exchange(
            f"{self.login_url.rstrip('/')}/oauth2/token",
            {
                "grant_type": "authorization_code",
                "client_id": self.client_id,
                "code": code,
                "redirect_uri": self.callback_url,
                "code_verifier": verifier,
            },
        )
        token = answer.get("access_token")
        if not isinstance(token, str) or not token:
            raise SignInFailed("the authorization server issued no access token")
        lifetime = answer.get("expires_in")
        return token, int(lifetime) if isinstance(lifetime, int) and lifetime > 0 else 3600
