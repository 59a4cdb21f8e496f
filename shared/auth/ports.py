"""What the token service needs from storage."""

from __future__ import annotations

from typing import Protocol

from shared.auth.contexts import TeamContext
from shared.auth.models import TokenRecord


class TokenStore(Protocol):
    """Team tokens by their secret's keyed hash, and per-token rate-limit windows.

    Token ids are unique across teams (`revoke` finds a token by id alone: the CLI and admin API
    name a token by id).
    """

    def put(self, secret_hash: str, record: TokenRecord) -> None:
        """Store a new token; `DuplicateToken` when a token already has that hash (never
        overwritten)."""
        ...

    def get_by_hash(self, secret_hash: str) -> TokenRecord | None:
        """The token whose secret hashes to `secret_hash` (revoked and expired ones included)."""
        ...

    def list_team(self, team: str) -> list[TokenRecord]:
        """Every token of `team`, revoked and expired ones included, oldest first."""
        ...

    def list_issued_by(self, team: str, token_id: str) -> list[TokenRecord]:
        """The tokens of `team` that `token_id` minted (revoked ones included)."""
        ...

    def revoke(self, token_id: str, revoked_at_iso: str) -> TokenRecord | None:
        """Mark the token revoked (a repeat keeps the first time); None when there is none."""
        ...

    def reserve_requests(
        self, caller_id: str, window_start: int, expires_epoch: int, wanted: int, limit: int
    ) -> int:
        """Atomically take up to `wanted` requests of the window's budget of `limit`; return
        how many were taken (0 once the window's budget is spent).

        Reservations of all callers — threads, processes, containers — never add up to more
        than `limit` per window: a gateway admits requests from its reserved slice without a
        write per request. The window's counter is kept until `expires_epoch` (seconds);
        windows that expired by `window_start` may be dropped, as a TTL would.
        """
        ...

    def put_context(self, team: str, context: TeamContext) -> None:
        """Set the team's own version of an allow-list context (replacing any before)."""
        ...

    def get_context(self, team: str, name: str) -> TeamContext | None:
        """The team's own version of context `name`; None while the team uses the preset."""
        ...

    def delete_context(self, team: str, name: str) -> bool:
        """Return the team to the preset of context `name`; False when it had none of its own."""
        ...


class DuplicateToken(Exception):
    """A token with that secret hash exists already (32 random bytes: in practice, a bug)."""
