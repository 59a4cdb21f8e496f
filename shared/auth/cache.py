"""Per-process state that spares the token store a round trip on every request.

Two pieces, both owned by one `TokenService` (one per container or server process):

- `VerifiedTokens`: tokens this process verified, keyed by the secret's keyed hash (never the
  secret), each kept for at most `ttl_seconds`. A revocation made in another process is seen
  within that bound; one made through this process evicts at once. Expiry is not cached: the
  caller checks `expires_at` against its clock on every request.
- `RateBuckets`: requests admitted locally from slices reserved in the store. The store never
  hands out more than a window's limit in all, so processes together never admit more than the
  limit; what a process reserved and did not use before its window ended is the only shortfall
  (at most one slice per process, see `slice_size`).
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass, field

from shared.auth.models import TokenRecord
from shared.auth.principal import Principal

# Each reservation takes this share of a window's limit (at least one request): with C processes
# serving one token, at most (C - 1) slices stay reserved but unused when the window ends (0 when
# traffic spreads evenly), and a process at the limit writes once per 1 % of it.
RATE_SLICE_FRACTION = 0.01
# Verified tokens a process remembers; beyond it the oldest entries go first.
MAX_CACHED_TOKENS = 10_000


def slice_size(per_minute: int) -> int:
    """Requests reserved from the store at once for a limit of `per_minute`."""
    return max(1, int(per_minute * RATE_SLICE_FRACTION))


@dataclass(frozen=True)
class Verified:
    """A token this process read from the store at `verified_at` (clock seconds)."""

    record: TokenRecord
    principal: Principal
    verified_at: float


class CacheGroup:
    """The token caches one revocation must reach at once: every cache of the process by
    default (`PROCESS`), so a token revoked through any service of this process — the admin
    API's, an agent deregistering — is refused by the gateway's at once. Tests simulating
    separate containers in one process give each its own group."""

    def __init__(self) -> None:
        self._members: weakref.WeakSet[VerifiedTokens] = weakref.WeakSet()
        self._lock = threading.Lock()

    def join(self, cache: VerifiedTokens) -> None:
        with self._lock:
            self._members.add(cache)

    def evict(self, *, token_ids: set[str] | None = None, team: str | None = None) -> None:
        """Forget, in every cache of the group, the entries of `token_ids` or of `team`."""
        with self._lock:
            members = list(self._members)
        for cache in members:
            cache.evict(token_ids=token_ids, team=team)


PROCESS = CacheGroup()


class VerifiedTokens:
    """Verified tokens by secret hash, each trusted for `ttl_seconds` after its read."""

    def __init__(self, ttl_seconds: float, group: CacheGroup = PROCESS) -> None:
        self._ttl = ttl_seconds
        self._entries: dict[str, Verified] = {}
        self._lock = threading.Lock()
        self.group = group
        group.join(self)

    def get(self, secret_hash: str, now: float) -> Verified | None:
        """The entry for `secret_hash` while it is fresh (`now` before its read is stale too:
        a clock set back never extends trust)."""
        with self._lock:
            entry = self._entries.get(secret_hash)
            if entry is None:
                return None
            if not 0 <= now - entry.verified_at < self._ttl:
                del self._entries[secret_hash]
                return None
            return entry

    def put(self, secret_hash: str, entry: Verified) -> None:
        if self._ttl <= 0:
            return
        with self._lock:
            if len(self._entries) >= MAX_CACHED_TOKENS:
                # Insertion order is read order: the oldest entries are the stalest.
                for stale in list(self._entries)[: MAX_CACHED_TOKENS // 10]:
                    del self._entries[stale]
            self._entries[secret_hash] = entry

    def evict(self, *, token_ids: set[str] | None = None, team: str | None = None) -> None:
        """Forget the entries of `token_ids`, or every entry of `team`."""
        with self._lock:
            for key, entry in list(self._entries.items()):
                if (token_ids is not None and entry.record.token_id in token_ids) or (
                    team is not None and entry.record.team == team
                ):
                    del self._entries[key]


@dataclass
class _Bucket:
    window_start: int
    left: int = 0
    # The store said the window's budget is spent: refuse locally until the next window.
    spent: bool = False


@dataclass
class RateBuckets:
    """Per-caller requests left from the slices this process reserved, per window."""

    _buckets: dict[str, _Bucket] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def take(self, caller_id: str, window_start: int) -> bool | None:
        """True: admitted from the local slice; False: the window is spent; None: reserve."""
        with self._lock:
            bucket = self._buckets.get(caller_id)
            if bucket is None or bucket.window_start != window_start:
                if len(self._buckets) >= MAX_CACHED_TOKENS:
                    self._drop_before(window_start)
                bucket = self._buckets[caller_id] = _Bucket(window_start)
            if bucket.left > 0:
                bucket.left -= 1
                return True
            return False if bucket.spent else None

    def add(self, caller_id: str, window_start: int, granted: int) -> None:
        """Record a reservation of `granted` requests, one of them used by the current request
        (`granted == 0`: the window is spent)."""
        with self._lock:
            bucket = self._buckets.get(caller_id)
            if bucket is None or bucket.window_start != window_start:
                if bucket is not None and bucket.window_start > window_start:
                    return  # a newer window began while this reservation was in flight
                bucket = self._buckets[caller_id] = _Bucket(window_start)
            if granted <= 0:
                bucket.spent = True
            else:
                bucket.left += granted - 1

    def _drop_before(self, window_start: int) -> None:
        for caller, bucket in list(self._buckets.items()):
            if bucket.window_start < window_start:
                del self._buckets[caller]
