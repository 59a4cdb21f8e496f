"""Serialized writes for local mode: moto has no per-item locking.

DynamoDB makes each conditional write and atomic counter safe under concurrency; moto does not
(its update is a read-modify-write in Python). Local mode therefore funnels every write through
one process-wide lock, so concurrent requests can never interleave and corrupt state.
"""

from __future__ import annotations

import threading

from shared.auth.models import TokenRecord
from shared.auth.ports import TokenStore


class SerializedTokenStore:
    """A `TokenStore` whose writes (token puts, revocations, rate counters) hold `lock`."""

    def __init__(self, store: TokenStore, lock: threading.RLock) -> None:
        self._store = store
        self._lock = lock

    def put(self, secret_hash: str, record: TokenRecord) -> None:
        with self._lock:
            self._store.put(secret_hash, record)

    def get_by_hash(self, secret_hash: str) -> TokenRecord | None:
        return self._store.get_by_hash(secret_hash)

    def list_team(self, team: str) -> list[TokenRecord]:
        return self._store.list_team(team)

    def list_issued_by(self, team: str, token_id: str) -> list[TokenRecord]:
        return self._store.list_issued_by(team, token_id)

    def revoke(self, token_id: str, revoked_at_iso: str) -> TokenRecord | None:
        with self._lock:
            return self._store.revoke(token_id, revoked_at_iso)

    def count_request(self, token_id: str, window_start: int, expires_epoch: int) -> int:
        with self._lock:
            return self._store.count_request(token_id, window_start, expires_epoch)
