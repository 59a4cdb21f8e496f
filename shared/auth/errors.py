"""Authentication outcomes the gateway maps to seed 000's error codes."""

from __future__ import annotations


class AuthError(Exception):
    """Base class of authentication and authorization failures."""


class InvalidToken(AuthError):
    """Missing, unknown, revoked or expired token (-32001, HTTP 401)."""


class RateLimited(AuthError):
    """The token spent its per-minute budget (-32003, HTTP 429)."""

    def __init__(self, retry_after_seconds: int) -> None:
        super().__init__(f"retry after {retry_after_seconds}s")
        self.retry_after_seconds = retry_after_seconds


class UnknownToken(AuthError):
    """`revoke` named a token id that does not exist."""
