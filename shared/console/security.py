"""The console's browser security: the session cookie, CSRF tokens and response headers.

The session is the team token itself, in an HttpOnly, SameSite=Strict cookie: no server-side
session store to run in Lambda, and JavaScript never reads it. CSRF tokens are derived from it
(an HMAC keyed by the secret), so they need no storage either, are the same in every Lambda
container, and cannot be computed by a page that does not hold the token. Before sign-in, the
sign-in form carries a random token that must match a cookie of its own (double submit).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Mapping
from urllib.parse import urlsplit

SESSION_COOKIE = "cairn_console"
LOGIN_COOKIE = "cairn_console_login"
# A working day: the token stays valid longer, the browser forgets it sooner.
SESSION_MAX_AGE = 8 * 3600
MAX_FORM_BYTES = 262_144

# No inline script or style, nothing from another origin, no framing, forms only to the console.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
SECURITY_HEADERS: Mapping[str, str] = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    # Not no-referrer: under it Chrome sends `Origin: null` on the console's own form posts.
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


def csrf_token(secret: str) -> str:
    """The CSRF token of a session: stable for the token, unguessable without it."""
    return hmac.new(secret.encode(), b"cairn-console-csrf-v1", hashlib.sha256).hexdigest()


def csrf_valid(secret: str, submitted: str | None) -> bool:
    return submitted is not None and hmac.compare_digest(csrf_token(secret), submitted)


def new_login_nonce() -> str:
    return secrets.token_urlsafe(32)


def login_nonce_valid(cookie: str | None, submitted: str | None) -> bool:
    return bool(cookie and submitted) and hmac.compare_digest(str(cookie), str(submitted))


def same_origin(headers: Mapping[str, str], host: str) -> bool:
    """A state-changing request must come from the console's own pages.

    `Sec-Fetch-Site` (every current browser) and `Origin` (when sent) must both agree; a request
    with neither (a non-browser client) still needs the CSRF token.
    """
    site = headers.get("sec-fetch-site")
    if site is not None and site not in {"same-origin", "none"}:
        return False
    origin = headers.get("origin")
    if origin is None:
        return True
    if origin == "null":
        # An opaque origin (a sandboxed frame, a privacy setting): only the browser's own
        # same-origin verdict vouches for it.
        return site == "same-origin"
    return urlsplit(origin).netloc == host


def cookie_secure(scheme: str) -> bool:
    """Secure cookies over HTTPS (AWS); the loopback server of `make serve` speaks plain HTTP."""
    return scheme == "https"
