"""OAuth access tokens: real RS256 JWTs signed by a test key, checked against a local JWKS."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from shared.auth.errors import InvalidToken
from shared.auth.oauth import OAuthConfig, OAuthVerifier, looks_like_jwt

ISSUER = "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_TEST"
RESOURCE = "https://cairn.example.com/mcp"


class Issuer:
    """A test authorization server: one RSA key, its JWKS, and tokens it signs."""

    def __init__(self, kid: str = "key-1") -> None:
        self.kid = kid
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.fetches = 0

    def jwks(self, url: str) -> Mapping[str, Any]:
        self.fetches += 1
        assert url == f"{ISSUER}/.well-known/jwks.json"
        public = jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key(), as_dict=True)
        return {"keys": [{**public, "kid": self.kid, "use": "sig", "alg": "RS256"}]}

    def token(self, **overrides: Any) -> str:
        now = int(time.time())
        claims: dict[str, Any] = {
            "iss": ISSUER,
            "sub": "user-123",
            "aud": RESOURCE,
            "exp": now + 600,
            "iat": now,
            "token_use": "access",
            "scope": f"{RESOURCE}/memory.read {RESOURCE}/search openid",
            "cognito:groups": ["cairn-team-alpha"],
            "username": "ada",
        }
        claims.update(overrides)
        claims = {k: v for k, v in claims.items() if v is not None}
        headers = {"kid": self.kid}
        return jwt.encode(claims, self.key, algorithm="RS256", headers=headers)


@pytest.fixture
def issuer() -> Issuer:
    return Issuer()


@pytest.fixture
def verifier(issuer: Issuer) -> OAuthVerifier:
    return OAuthVerifier(OAuthConfig(issuer=ISSUER, audience=RESOURCE), fetch=issuer.jwks)


def test_a_valid_access_token_becomes_the_teams_principal(
    issuer: Issuer, verifier: OAuthVerifier
) -> None:
    principal = verifier.verify(issuer.token())

    assert principal.team == "alpha"
    assert principal.scopes == {"memory.read", "search"}  # prefix removed, `openid` dropped
    assert principal.token_id == "oauth:user-123"
    assert principal.actor == "token:oauth:user-123"
    assert principal.token_name == "ada"
    assert principal.auth_method == "oauth"
    assert principal.rate_limit_per_minute == 600


@pytest.mark.parametrize(
    ("claims", "reason"),
    [
        ({"aud": "https://other.example.com/mcp"}, "Audience"),
        ({"aud": None}, "aud"),
        ({"iss": "https://evil.example.com"}, "issuer"),
        ({"exp": int(time.time()) - 120}, "expired"),
        ({"token_use": "id"}, "ID token"),
        ({"cognito:groups": []}, "exactly one team"),
        ({"cognito:groups": ["cairn-team-a", "cairn-team-b"]}, "exactly one team"),
        ({"cognito:groups": ["admins"]}, "exactly one team"),
        ({"scope": "openid profile"}, "none of cairn's scopes"),
    ],
)
def test_tokens_that_fail_a_check_are_refused(
    issuer: Issuer, verifier: OAuthVerifier, claims: dict[str, Any], reason: str
) -> None:
    with pytest.raises(InvalidToken, match=reason):
        verifier.verify(issuer.token(**claims))


def test_a_token_signed_by_another_key_is_refused(verifier: OAuthVerifier) -> None:
    forger = Issuer(kid="key-1")  # same kid, different key
    with pytest.raises(InvalidToken, match="Signature"):
        verifier.verify(forger.token())


def test_unsigned_and_hmac_tokens_are_refused(issuer: Issuer, verifier: OAuthVerifier) -> None:
    claims = {"iss": ISSUER, "sub": "x", "aud": RESOURCE, "exp": int(time.time()) + 60}
    unsigned = jwt.encode(claims, None, algorithm="none", headers={"kid": issuer.kid})
    # The classic confusion attack: the public key used as an HMAC secret.
    with pytest.raises(InvalidToken, match="algorithm"):
        verifier.verify(unsigned)
    hmac = jwt.encode(
        claims, "secret-shared-with-nobody-at-all-32b", algorithm="HS256", headers={"kid": "k"}
    )
    with pytest.raises(InvalidToken, match="algorithm"):
        verifier.verify(hmac)


def test_garbage_is_refused_without_a_key_fetch(issuer: Issuer, verifier: OAuthVerifier) -> None:
    with pytest.raises(InvalidToken):
        verifier.verify("a.b.c")
    assert issuer.fetches == 0


def test_keys_are_cached_and_an_unknown_kid_refetches_at_most_once_a_minute(
    issuer: Issuer, verifier: OAuthVerifier
) -> None:
    for _ in range(5):
        verifier.verify(issuer.token())
    assert issuer.fetches == 1
    rotated = Issuer(kid="key-2")
    for _ in range(5):
        with pytest.raises(InvalidToken, match="not one of the issuer's"):
            verifier.verify(rotated.token())
    assert issuer.fetches == 1  # fetched under a minute ago: not refetched for made-up kids


def test_an_unreachable_jwks_refuses_the_token(issuer: Issuer) -> None:
    def down(url: str) -> Mapping[str, Any]:
        raise OSError("connection refused")

    verifier = OAuthVerifier(OAuthConfig(issuer=ISSUER, audience=RESOURCE), fetch=down)
    with pytest.raises(InvalidToken, match="could not be read"):
        verifier.verify(issuer.token())


def test_team_tokens_are_not_mistaken_for_jwts(issuer: Issuer) -> None:
    assert looks_like_jwt(issuer.token())
    assert not looks_like_jwt("cairn_sk_abc.def.ghi")
    assert not looks_like_jwt("cairn_sk_" + "x" * 43)
