"""The TokenStore contract (tokens and rate-limit windows), on DynamoDB (moto) and SQLite alike."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from shared.auth.models import TokenRecord
from shared.auth.ports import DuplicateToken, TokenStore
from shared.auth.wiring import build_token_store
from tests.unit.storage.conftest import Backend

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
WINDOW = 1_800_000_000


def token(number: int, team: str = "alpha", **fields: object) -> TokenRecord:
    values: dict[str, object] = {
        "token_id": f"tok_{number:04d}",
        "team": team,
        "name": f"token {number}",
        "scopes": ("memory", "search"),
        "created_at": T0 + timedelta(minutes=number),
    }
    values.update(fields)
    return TokenRecord.model_validate(values)


def secret_hash(number: int) -> str:
    return f"{number:064x}"


@pytest.fixture
def store(backend: Backend) -> TokenStore:
    return build_token_store()


def test_a_stored_token_reads_back_whole(store: TokenStore) -> None:
    stored = token(
        1,
        allowed_tools=("memory_get",),
        agent_id="ci-7",
        expires_at=T0 + timedelta(days=30),
        rate_limit_per_minute=600,
        issued_by="tok_0000",
        toolsets=("memory", "search"),
    )
    store.put(secret_hash(1), stored)
    assert store.get_by_hash(secret_hash(1)) == stored
    assert store.get_by_hash(secret_hash(2)) is None


def test_a_hash_is_never_overwritten(store: TokenStore) -> None:
    store.put(secret_hash(1), token(1))
    with pytest.raises(DuplicateToken):
        store.put(secret_hash(1), token(2, name="intruder"))
    found = store.get_by_hash(secret_hash(1))
    assert found is not None
    assert found.name == "token 1"


def test_a_team_lists_only_its_tokens_oldest_first(store: TokenStore) -> None:
    for number in (3, 1, 2):
        store.put(secret_hash(number), token(number))
    store.put(secret_hash(9), token(9, team="beta"))
    store.revoke("tok_0002", "2026-11-02T00:00:00+00:00")
    assert [r.token_id for r in store.list_team("alpha")] == ["tok_0001", "tok_0002", "tok_0003"]
    assert [r.token_id for r in store.list_team("beta")] == ["tok_0009"]
    assert store.list_team("gamma") == []


def test_issued_tokens_are_listed_by_issuer_within_the_team(store: TokenStore) -> None:
    store.put(secret_hash(1), token(1))
    store.put(secret_hash(2), token(2, issued_by="tok_0001"))
    store.put(secret_hash(3), token(3, issued_by="tok_0001"))
    store.put(secret_hash(4), token(4, issued_by="tok_0002"))
    # Another team's token naming the same issuer is not the issuer's.
    store.put(secret_hash(5), token(5, team="beta", issued_by="tok_0001"))
    store.revoke("tok_0003", "2026-11-02T00:00:00+00:00")
    issued = store.list_issued_by("alpha", "tok_0001")
    assert sorted(r.token_id for r in issued) == ["tok_0002", "tok_0003"]
    assert [r.token_id for r in store.list_issued_by("alpha", "tok_0002")] == ["tok_0004"]
    assert store.list_issued_by("alpha", "tok_0004") == []
    assert [r.token_id for r in store.list_issued_by("beta", "tok_0001")] == ["tok_0005"]


def test_revoking_marks_the_token_and_a_repeat_keeps_the_first_time(store: TokenStore) -> None:
    store.put(secret_hash(1), token(1))
    first = store.revoke("tok_0001", "2026-11-02T00:00:00+00:00")
    assert first is not None
    assert first.revoked_at == datetime(2026, 11, 2, tzinfo=UTC)
    again = store.revoke("tok_0001", "2026-11-03T00:00:00+00:00")
    assert again == first
    stored = store.get_by_hash(secret_hash(1))
    assert stored == first
    assert not stored.is_active(T0)


def test_revoking_an_unknown_token_finds_none(store: TokenStore) -> None:
    store.put(secret_hash(1), token(1))
    assert store.revoke("tok_nope", "2026-11-02T00:00:00+00:00") is None
    untouched = store.get_by_hash(secret_hash(1))
    assert untouched is not None
    assert untouched.revoked_at is None


def reserve(store: TokenStore, caller: str, window: int, wanted: int, limit: int = 10) -> int:
    return store.reserve_requests(caller, window, window + 360, wanted, limit)


def test_reservations_take_slices_of_a_window_budget_per_caller(store: TokenStore) -> None:
    assert [reserve(store, "tok_a", WINDOW, 4) for _ in range(2)] == [4, 4]
    # Only what is left of the 10: a slice is cut down, never overdrawn.
    assert reserve(store, "tok_a", WINDOW, 4) == 2
    assert reserve(store, "tok_a", WINDOW, 4) == 0
    assert reserve(store, "tok_a", WINDOW, 1) == 0
    # Another caller and another window have budgets of their own.
    assert reserve(store, "tok_b", WINDOW, 4) == 4
    assert reserve(store, "tok_a", WINDOW + 60, 4) == 4


def test_a_slice_larger_than_the_limit_takes_the_limit(store: TokenStore) -> None:
    assert reserve(store, "tok_a", WINDOW, 50, limit=3) == 3
    assert reserve(store, "tok_a", WINDOW, 1, limit=3) == 0


def test_one_request_at_a_time_counts_exactly_to_the_limit(store: TokenStore) -> None:
    assert [reserve(store, "tok_a", WINDOW, 1, limit=3) for _ in range(5)] == [1, 1, 1, 0, 0]


def test_an_expired_window_is_dropped_when_a_later_window_opens(
    backend: Backend, store: TokenStore
) -> None:
    """SQLite deletes windows whose expiry passed; DynamoDB carries the expiry as the item's TTL."""
    from shared.config import names

    reserve(store, "tok_a", WINDOW, 1)
    reserve(store, "tok_b", WINDOW + 300, 1)
    reserve(store, "tok_a", WINDOW + 360, 1)
    if backend.is_sqlite:
        rows = (
            backend.database()
            .connection()
            .execute("SELECT token_id, window_start FROM rate_windows ORDER BY window_start")
            .fetchall()
        )
        assert [tuple(row) for row in rows] == [("tok_b", WINDOW + 300), ("tok_a", WINDOW + 360)]
    else:
        items = backend.table(names.TABLE_TOKENS).scan()["Items"]
        expiry = {item["pk"]: int(item[names.TTL_ATTRIBUTE]) for item in items}
        assert expiry[f"RATE#tok_a#{WINDOW}"] == WINDOW + 360
        assert expiry[f"RATE#tok_a#{WINDOW + 360}"] == WINDOW + 720


def test_concurrent_reservations_never_pass_the_limit(backend: Backend, store: TokenStore) -> None:
    if not backend.is_sqlite:
        pytest.skip("moto's conditional writes are not atomic across threads (DynamoDB's are)")
    threads_count, attempts, limit = 8, 25, 500
    granted: list[int] = []
    guard = threading.Lock()
    barrier = threading.Barrier(threads_count)

    def hammer() -> None:
        barrier.wait()
        slices = [reserve(store, "tok_a", WINDOW, 3, limit) for _ in range(attempts)]
        with guard:
            granted.extend(slices)

    threads = [threading.Thread(target=hammer) for _ in range(threads_count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # 600 asked for, 500 there: every request of the budget handed out once, none beyond it.
    assert sum(granted) == limit
    assert reserve(store, "tok_a", WINDOW, 1, limit) == 0


def test_concurrent_revocations_agree_on_one_time(backend: Backend, store: TokenStore) -> None:
    if not backend.is_sqlite:
        pytest.skip("moto's conditional writes are not atomic across threads (DynamoDB's are)")
    store.put(secret_hash(1), token(1))
    results: list[TokenRecord | None] = []
    barrier = threading.Barrier(6)

    def revoke(day: int) -> None:
        barrier.wait()
        results.append(store.revoke("tok_0001", f"2026-11-{day:02d}T00:00:00+00:00"))

    threads = [threading.Thread(target=revoke, args=(day,)) for day in range(2, 8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    stored = store.get_by_hash(secret_hash(1))
    assert stored is not None
    assert stored.revoked_at is not None
    assert {r.revoked_at if r else None for r in results} == {stored.revoked_at}


def test_an_old_snapshot_migrates_into_sqlite(backend: Backend, tmp_path: Path) -> None:
    """Items the DynamoDB adapter wrote read back the same from SQLite after `migrate_items`."""
    if backend.is_sqlite:
        pytest.skip("the source of a migration is the DynamoDB layout")
    from shared.auth.adapters.sqlite import SqliteTokenStore
    from shared.config import names
    from shared.storage.sqlite import Database

    dynamo = build_token_store()
    dynamo.put(secret_hash(1), token(1, allowed_tools=("memory_get",), rate_limit_per_minute=5))
    dynamo.put(secret_hash(2), token(2, issued_by="tok_0001", expires_at=T0 + timedelta(days=1)))
    dynamo.put(secret_hash(3), token(3, team="beta"))
    dynamo.revoke("tok_0002", "2026-11-02T00:00:00+00:00")
    reserve(dynamo, "tok_0001", WINDOW, 1)
    items = list(backend.table(names.TABLE_TOKENS).scan()["Items"])
    sqlite = SqliteTokenStore(Database(tmp_path / "migrated.db"))
    # Three tokens; the rate window and the foreign record are left behind.
    assert sqlite.migrate_items([*items, {"pk": "HASH#x", "sk": "OTHER"}]) == 3
    for number in (1, 2, 3):
        assert sqlite.get_by_hash(secret_hash(number)) == dynamo.get_by_hash(secret_hash(number))
    assert sqlite.list_team("alpha") == dynamo.list_team("alpha")
    assert sqlite.list_issued_by("alpha", "tok_0001") == dynamo.list_issued_by("alpha", "tok_0001")
    assert reserve(sqlite, "tok_0001", WINDOW, 10) == 10
