"""What the token service needs from storage."""

from __future__ import annotations

from typing import Protocol

from shared.auth.models import TokenRecord


class TokenStore(Protocol):
    def put(self, secret_hash: str, record: TokenRecord) -> None: ...

    def get_by_hash(self, secret_hash: str) -> TokenRecord | None: ...

    def list_team(self, team: str) -> list[TokenRecord]: ...

    def list_issued_by(self, team: str, token_id: str) -> list[TokenRecord]:
        """The tokens of `team` that `token_id` minted (revoked ones included)."""
        ...

    def revoke(self, token_id: str, revoked_at_iso: str) -> TokenRecord | None:
        """Mark the token revoked (a repeat keeps the first time); None when there is none."""
        ...

    def count_request(self, token_id: str, window_start: int, expires_epoch: int) -> int:
        """Atomically add one to the token's counter for a window and return the new count."""
        ...
