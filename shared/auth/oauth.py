"""OAuth 2.1 access tokens beside team tokens: JWTs from one configured authorization server.

Some MCP clients reach remote servers only through OAuth (hosted chat apps' connectors, the newest
SDK clients). When an issuer is configured, the gateway accepts its JWT access tokens as well as
`cairn_sk_` team tokens, and both become the same `Principal`.

A token is accepted only if (RFC 9068 / RFC 8707 / the MCP authorization spec):
- it is signed with RS256 by a key of the issuer's JWKS (fetched over HTTPS, cached, refetched
  at most once a minute for an unknown `kid`), never `none` or an HMAC algorithm;
- `iss` is the configured issuer, `exp` is in the future (30 s leeway), `nbf`/`iat` not ahead;
- `aud` holds cairn's resource URL (audience binding: a token minted for another resource is
  refused, however valid its signature);
- it is an access token (Cognito marks its tokens with `token_use`: ID tokens are refused).

Claims become the principal: the scopes come from `scope` (Cognito writes them as
`<resource-server-id>/<scope>`; the prefix is removed, unknown scopes are dropped), the team from
the one `cognito:groups` entry named `cairn-team-<team>` (none, or two, is refused: a token must
say which team it acts for), the identity from `sub`.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from shared.auth.errors import InvalidToken
from shared.auth.principal import KNOWN_SCOPES, Principal

ALGORITHMS: Final = ("RS256",)
LEEWAY_SECONDS: Final = 30
TEAM_GROUP_PREFIX: Final = "cairn-team-"
GROUPS_CLAIM: Final = "cognito:groups"
# An unknown `kid` refetches the JWKS (keys rotate), but at most this often: a flood of tokens
# with made-up key ids must not become a flood of requests to the issuer.
JWKS_REFETCH_SECONDS: Final = 60
JWKS_MAX_AGE_SECONDS: Final = 3600
OAUTH_TOKEN_PREFIX: Final = "oauth:"

JwksFetcher = Callable[[str], Mapping[str, Any]]


@dataclass(frozen=True)
class OAuthConfig:
    """The one authorization server cairn trusts, and the audience its tokens must name."""

    issuer: str
    audience: str
    jwks_url: str | None = None
    rate_limit_per_minute: int = 600

    @property
    def jwks(self) -> str:
        # Cognito (and most OpenID providers) publish the keys here.
        return self.jwks_url or f"{self.issuer.rstrip('/')}/.well-known/jwks.json"


def fetch_jwks(url: str) -> Mapping[str, Any]:
    """The issuer's key set, over HTTPS only."""
    if not url.startswith("https://"):
        raise InvalidToken("the authorization server's JWKS must be served over HTTPS")
    request = urllib.request.Request(url, headers={"Accept": "application/json"})  # noqa: S310
    with urllib.request.urlopen(request, timeout=5) as response:  # noqa: S310 - https only
        document: Mapping[str, Any] = json.loads(response.read(1_000_000))
    return document


class _KeySet:
    """The issuer's signing keys by `kid`, cached; thread-safe."""

    def __init__(
        self, url: str, fetch: JwksFetcher, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._url = url
        self._fetch = fetch
        self._clock = clock
        self._keys: dict[str, Any] = {}
        self._fetched_at: float | None = None
        self._lock = threading.Lock()

    def key(self, kid: str) -> Any:
        with self._lock:
            now = self._clock()
            stale = self._fetched_at is None or now - self._fetched_at > JWKS_MAX_AGE_SECONDS
            may_refetch = self._fetched_at is None or now - self._fetched_at > (
                JWKS_REFETCH_SECONDS
            )
            if stale or (kid not in self._keys and may_refetch):
                self._load(now)
            if kid not in self._keys:
                raise InvalidToken("the token's signing key is not one of the issuer's")
            return self._keys[kid]

    def _load(self, now: float) -> None:
        try:
            document = self._fetch(self._url)
        except InvalidToken:
            raise
        except Exception as exc:  # network, TLS, JSON: the token cannot be checked
            raise InvalidToken("the authorization server's keys could not be read") from exc
        import jwt

        keys: dict[str, Any] = {}
        for entry in document.get("keys", []):
            if not isinstance(entry, dict) or entry.get("kty") != "RSA" or "kid" not in entry:
                continue
            if entry.get("use", "sig") != "sig":
                continue
            keys[str(entry["kid"])] = jwt.PyJWK.from_dict(entry, algorithm="RS256").key
        self._keys, self._fetched_at = keys, now


def looks_like_jwt(credential: str) -> bool:
    """A compact JWS (three base64url parts); team tokens are `cairn_sk_…` and have no dots."""
    return credential.count(".") == 2 and not credential.startswith("cairn_sk_")


class OAuthVerifier:
    """Turns a JWT access token of the configured issuer into a `Principal`, or `InvalidToken`."""

    def __init__(self, config: OAuthConfig, fetch: JwksFetcher = fetch_jwks) -> None:
        self.config = config
        self._keys = _KeySet(config.jwks, fetch)

    def verify(self, token: str, toolset: str | None = None) -> Principal:
        """The principal of `token`; at `/mcp/<toolset>` its audience may also be that URL
        (RFC 8707: a client binds its token to the MCP URL it connects to)."""
        audiences = [self.config.audience]
        if toolset:
            audiences.append(f"{self.config.audience.rstrip('/')}/{toolset}")
        # PyJWT and cryptography load on the first JWT, not with the gateway: a stack without
        # an authorization server never pays for them at cold start.
        import jwt

        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError as exc:
            raise InvalidToken("not a well-formed JWT") from exc
        if header.get("alg") not in ALGORITHMS:
            raise InvalidToken(f"JWT algorithm {header.get('alg')!r} is not accepted (RS256)")
        kid = header.get("kid")
        if not isinstance(kid, str):
            raise InvalidToken("the JWT names no signing key (kid)")
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                self._keys.key(kid),
                algorithms=list(ALGORITHMS),
                issuer=self.config.issuer,
                audience=audiences,
                leeway=LEEWAY_SECONDS,
                options={"require": ["exp", "iss", "sub", "aud"]},
            )
        except jwt.PyJWTError as exc:
            raise InvalidToken(f"JWT refused: {exc}") from exc
        if claims.get("token_use", "access") != "access":
            raise InvalidToken("an ID token is not an access token")
        return self._principal(claims)

    def _principal(self, claims: Mapping[str, Any]) -> Principal:
        team = _team_of(claims.get(GROUPS_CLAIM))
        scopes = _scopes_of(claims.get("scope"), self.config.audience)
        if not scopes:
            raise InvalidToken("the access token grants none of cairn's scopes")
        subject = str(claims["sub"])
        return Principal(
            team=team,
            token_id=OAUTH_TOKEN_PREFIX + subject,
            token_name=str(claims.get("username") or subject),
            scopes=scopes,
            token_expires_at=datetime.fromtimestamp(int(claims["exp"]), tz=UTC),
            rate_limit_per_minute=self.config.rate_limit_per_minute,
            auth_method="oauth",
        )


def _team_of(groups: object) -> str:
    names = groups if isinstance(groups, list) else []
    teams = sorted(
        {
            name[len(TEAM_GROUP_PREFIX) :]
            for name in names
            if isinstance(name, str)
            and name.startswith(TEAM_GROUP_PREFIX)
            and len(name) > len(TEAM_GROUP_PREFIX)
        }
    )
    if len(teams) != 1:
        raise InvalidToken(
            f"the access token must name exactly one team (a `{TEAM_GROUP_PREFIX}<team>` group "
            f"in `{GROUPS_CLAIM}`); it names {len(teams)}"
        )
    return teams[0]


def _scopes_of(scope_claim: object, audience: str) -> frozenset[str]:
    if not isinstance(scope_claim, str):
        return frozenset()
    prefix = audience.rstrip("/") + "/"
    granted = set()
    for scope in scope_claim.split():
        name = scope[len(prefix) :] if scope.startswith(prefix) else scope
        if name in KNOWN_SCOPES:
            granted.add(name)
    return frozenset(granted)
