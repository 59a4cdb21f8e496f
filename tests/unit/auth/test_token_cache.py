"""Auth without a store round trip per request: the verified-token cache's revocation and expiry
bounds, and the rate limit shared by several containers through reserved slices.

Each simulated container is its own `TokenService` (own cache, own buckets, own `CacheGroup`, as
separate processes would have) on one SQLite store; the clock is injected, nothing sleeps.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import pytest

from shared.auth.adapters.sqlite import SqliteTokenStore
from shared.auth.cache import CacheGroup, slice_size
from shared.auth.contexts import ContextRequest
from shared.auth.errors import InvalidToken, RateLimited
from shared.auth.models import TokenRecord, TokenRequest
from shared.auth.ports import TokenStore
from shared.auth.service import TokenService
from shared.storage.sqlite import Database

BOUND = 60.0
T0 = 1_800_000_000.0  # the start of a rate window


class CountingStore:
    """The store, counting the calls each request makes to it."""

    def __init__(self, store: TokenStore) -> None:
        self._store = store
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Callable[..., object]:
        method = getattr(self._store, name)

        def counted(*args: object, **kwargs: object) -> object:
            self.calls.append(name)
            return method(*args, **kwargs)

        return counted


@pytest.fixture
def store(tmp_path: Path) -> CountingStore:
    return CountingStore(SqliteTokenStore(Database(tmp_path / "cairn.db")))


def container(store: CountingStore, clock: list[float]) -> TokenService:
    return TokenService(
        store,  # type: ignore[arg-type]  # a counting proxy of a TokenStore
        b"pepper",
        clock=lambda: clock[0],
        cache_seconds=BOUND,
        cache_group=CacheGroup(),
    )


def issue(service: TokenService, **fields: object) -> tuple[str, TokenRecord]:
    request = TokenRequest.model_validate(
        {"team": "alpha", "name": "agent", "scopes": ("memory",), **fields}
    )
    issued = service.issue(request)
    return issued.secret, issued.record


def test_a_warm_token_is_not_read_again_within_the_bound(store: CountingStore) -> None:
    clock = [T0]
    service = container(store, clock)
    secret, _ = issue(service)
    store.calls.clear()
    for _ in range(50):
        service.authenticate_and_limit(secret)
        clock[0] += 0.5
    # One token read, and one slice of the default 600/min (6 requests) per 6 requests.
    assert store.calls.count("get_by_hash") == 1
    assert store.calls.count("reserve_requests") == 50 // slice_size(600) + 1
    clock[0] = T0 + BOUND + 1
    service.authenticate(secret)
    assert store.calls.count("get_by_hash") == 2


def test_a_revoked_token_is_refused_at_once_where_it_was_revoked(store: CountingStore) -> None:
    clock = [T0]
    gateway = container(store, clock)
    # The gateway and the admin API of one process share the process's cache group.
    admin = TokenService(
        store,  # type: ignore[arg-type]
        b"pepper",
        clock=lambda: clock[0],
        cache_seconds=BOUND,
        cache_group=gateway._verified.group,
    )
    secret, record = issue(admin)
    gateway.authenticate(secret)
    admin.revoke(record.token_id)
    with pytest.raises(InvalidToken):
        gateway.authenticate(secret)


def test_a_revoked_token_is_refused_elsewhere_within_the_bound(store: CountingStore) -> None:
    clock = [T0]
    containers = [container(store, clock) for _ in range(4)]
    secret, record = issue(containers[0])
    other_secret, _ = issue(containers[0], name="other")
    for service in containers:
        service.authenticate(secret)
    containers[0].revoke(record.token_id)
    clock[0] += 1
    with pytest.raises(InvalidToken):
        containers[0].authenticate(secret)
    # Others may still admit it, but never past the bound after their own read of it.
    clock[0] = T0 + BOUND
    for service in containers[1:]:
        with pytest.raises(InvalidToken):
            service.authenticate(secret)
    containers[1].authenticate(other_secret)  # another token is unaffected


def test_revoking_an_issuer_evicts_the_tokens_it_minted(store: CountingStore) -> None:
    clock = [T0]
    service = container(store, clock)
    issuer_secret, issuer_record = issue(service)
    issuer, _ = service.authenticate(issuer_secret)
    minted = service.issue(
        TokenRequest(team="alpha", name="worker", scopes=("memory",)), issuer=issuer
    )
    service.authenticate(minted.secret)
    service.revoke(issuer_record.token_id)
    with pytest.raises(InvalidToken):
        service.authenticate(minted.secret)


def test_an_expired_token_is_refused_at_once_even_when_cached(store: CountingStore) -> None:
    clock = [T0]
    service = container(store, clock)
    secret, record = issue(service, expires_days=1)
    assert record.expires_at is not None
    clock[0] = record.expires_at.timestamp() - 1
    service.authenticate(secret)  # cached now, one second before its expiry
    clock[0] += 1
    with pytest.raises(InvalidToken):
        service.authenticate(secret)


def test_a_clock_set_back_never_extends_trust(store: CountingStore) -> None:
    clock = [T0]
    service = container(store, clock)
    secret, _ = issue(service)
    service.authenticate(secret)
    store.calls.clear()
    clock[0] -= 10
    service.authenticate(secret)
    assert store.calls == ["get_by_hash"]


def test_an_unknown_token_is_never_remembered(store: CountingStore) -> None:
    clock = [T0]
    service = container(store, clock)
    for _ in range(3):
        with pytest.raises(InvalidToken):
            service.authenticate("cairn_sk_nope")
    assert store.calls.count("get_by_hash") == 3


def test_a_context_change_reaches_the_tokens_of_its_team_at_once(store: CountingStore) -> None:
    clock = [T0]
    service = container(store, clock)
    secret, _ = issue(service, context="agent")
    before, _ = service.authenticate(secret)
    assert before.allowed_tools is not None
    assert "engram_get" in before.allowed_tools
    service.set_context(ContextRequest(team="alpha", name="agent", tools=("ping",)))
    after, _ = service.authenticate(secret)
    assert after.allowed_tools == frozenset({"ping"})


def admitted(containers: list[TokenService], secret: str, picks: list[int]) -> int:
    count = 0
    for pick in picks:
        try:
            containers[pick].authenticate_and_limit(secret)
            count += 1
        except RateLimited:
            pass
    return count


@pytest.mark.parametrize(
    ("containers_count", "weights"),
    [(8, None), (8, [10, 1, 1, 1, 1, 1, 1, 1]), (4, [1, 2, 4, 8]), (8, [1, 0, 0, 0, 0, 0, 0, 0])],
    ids=["even", "one-hot", "skewed", "all-on-one"],
)
def test_containers_sharing_a_limit_admit_within_ten_percent_of_it(
    store: CountingStore, containers_count: int, weights: list[int] | None
) -> None:
    limit = 600
    clock = [T0 + 1]
    containers = [container(store, clock) for _ in range(containers_count)]
    secret, _ = issue(containers[0], rate_limit_per_minute=limit)
    rng = random.Random(containers_count)
    store.calls.clear()
    # Every container serves a first request (and reserves a slice), then twice the limit
    # within the window, spread over the containers by the weights.
    picks = [
        *range(containers_count),
        *rng.choices(range(containers_count), weights=weights, k=2 * limit),
    ]
    first = admitted(containers, secret, picks)
    assert limit * 0.9 <= first <= limit
    # Far fewer store writes than requests: one per slice, and a spent window writes no more.
    assert store.calls.count("reserve_requests") <= first / slice_size(limit) + 2 * containers_count
    # The next window has the whole budget again.
    clock[0] += 60
    assert limit * 0.9 <= admitted(containers, secret, picks) <= limit


def test_a_limit_smaller_than_a_slice_is_exact(store: CountingStore) -> None:
    clock = [T0 + 20]
    containers = [container(store, clock) for _ in range(3)]
    secret, _ = issue(containers[0], rate_limit_per_minute=5)
    assert admitted(containers, secret, [0, 1, 2] * 4) == 5
    with pytest.raises(RateLimited) as refused:
        containers[2].authenticate_and_limit(secret)
    assert refused.value.retry_after_seconds == 40
