"""The SessionStore contract, on DynamoDB (moto) and SQLite alike."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from shared.app.wiring import build_session_service
from shared.auth.principal import Principal
from shared.memory.wiring import build_memory_service
from shared.sessions.adapters.memory import MemoryEngrams
from shared.sessions.adapters.sqlite import SqliteSessionStore
from shared.sessions.models import Message, ModelChoice, ModelInfo, Session
from shared.sessions.ports import (
    CompactionLost,
    SessionOwner,
    SessionPinned,
    SessionStore,
    UnknownSession,
)
from shared.sessions.service import Cleanup, SessionService
from shared.sessions.wiring import build_model_catalog, build_session_store
from shared.storage.pages import BadCursor
from tests.unit.storage.conftest import Backend, numbered

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
WALLET = "0xabc"
HECATE = SessionOwner("hecate", WALLET)
MOROS = SessionOwner("moros", WALLET)


def session(number: int, **fields: object) -> Session:
    owner: dict[str, object] = {"persona": "hecate", "wallet_address": WALLET}
    return numbered(Session, f"ses_{number:04d}", at(number), {**owner, **fields})


def at(minutes: int) -> datetime:
    return T0 + timedelta(minutes=minutes)


@pytest.fixture
def store(backend: Backend) -> SessionStore:
    return build_session_store()


def test_a_created_session_reads_back_with_its_messages(store: SessionStore) -> None:
    first = Message(seq=1, role="user", content="hello", at=T0)
    created = session(1, message_count=1, title="hello")
    store.create("alpha", created, [first])

    assert store.get("alpha", created.id) == created
    assert store.messages("alpha", created.id) == [first]


def test_reads_and_writes_are_confined_to_the_team(store: SessionStore) -> None:
    store.create("alpha", session(1), [])

    assert store.get("beta", "ses_0001") is None
    assert store.messages("beta", "ses_0001") == []
    assert store.list_owner("beta", HECATE, limit=10).items == []
    with pytest.raises(UnknownSession):
        store.append("beta", "ses_0001", [("user", "x")], at(5))
    with pytest.raises(UnknownSession):
        store.delete("beta", "ses_0001")
    with pytest.raises(UnknownSession):
        store.set_pinned("beta", "ses_0001", True)
    with pytest.raises(CompactionLost):
        store.claim_for_compaction("beta", "ses_0001", "c", at(5), at(10))
    assert store.get("alpha", "ses_0001") is not None


def test_appends_number_messages_in_order_and_move_updated_at(store: SessionStore) -> None:
    store.create("alpha", session(1), [])

    updated, added = store.append(
        "alpha", "ses_0001", [("user", "hi"), ("assistant", "hey")], at(5)
    )
    again, more = store.append("alpha", "ses_0001", [("user", "more")], at(6))

    assert [m.seq for m in added + more] == [1, 2, 3]
    assert updated.title == "hi"
    assert (again.message_count, again.updated_at, again.title) == (3, at(6), "hi")
    assert [m.content for m in store.messages("alpha", "ses_0001")] == ["hi", "hey", "more"]
    assert store.get("alpha", "ses_0001") == again


def test_listing_is_by_persona_and_wallet_most_recently_updated_first(
    store: SessionStore,
) -> None:
    for number in range(1, 6):
        store.create("alpha", session(number), [])
    store.create("alpha", session(6, wallet_address="0xother"), [])
    store.create("alpha", session(7, persona="moros"), [])
    store.touch("alpha", "ses_0002", at(60))

    first = store.list_owner("alpha", HECATE, limit=3)
    rest = store.list_owner("alpha", HECATE, limit=3, cursor=first.next_cursor)

    assert [s.id for s in first.items] == ["ses_0002", "ses_0005", "ses_0004"]
    assert [s.id for s in rest.items] == ["ses_0003", "ses_0001"]
    assert rest.next_cursor is None
    assert [s.id for s in store.list_owner("alpha", MOROS, limit=10).items] == ["ses_0007"]


def test_a_cursor_of_another_team_is_refused(store: SessionStore) -> None:
    for number in range(1, 4):
        store.create("alpha", session(number), [])
    page = store.list_owner("alpha", HECATE, limit=1)
    assert page.next_cursor is not None
    with pytest.raises(BadCursor):
        store.list_owner("beta", HECATE, limit=1, cursor=page.next_cursor)


def test_delete_removes_the_session_and_its_messages_but_refuses_a_pinned_one(
    store: SessionStore,
) -> None:
    store.create("alpha", session(1), [])
    store.append("alpha", "ses_0001", [("user", "x")], at(2))
    store.create("alpha", session(2), [])
    store.set_pinned("alpha", "ses_0002", True)

    deleted = store.delete("alpha", "ses_0001")
    with pytest.raises(SessionPinned) as refused:
        store.delete("alpha", "ses_0002")

    assert deleted.id == "ses_0001"
    assert store.get("alpha", "ses_0001") is None
    assert store.messages("alpha", "ses_0001") == []
    assert refused.value.session.id == "ses_0002"
    assert store.get("alpha", "ses_0002") is not None
    with pytest.raises(UnknownSession):
        store.delete("alpha", "ses_0001")


def test_a_compaction_claim_is_won_once_until_its_lease_ends(store: SessionStore) -> None:
    store.create("alpha", session(1), [])

    store.claim_for_compaction("alpha", "ses_0001", "first", at(10), at(15))
    with pytest.raises(CompactionLost):
        store.claim_for_compaction("alpha", "ses_0001", "second", at(11), at(16))
    taken_over = store.claim_for_compaction("alpha", "ses_0001", "third", at(20), at(25))

    assert taken_over.compacting_by == "third"


def test_a_pinned_session_cannot_be_claimed_for_compaction(store: SessionStore) -> None:
    store.create("alpha", session(1), [])
    store.set_pinned("alpha", "ses_0001", True)
    with pytest.raises(CompactionLost):
        store.claim_for_compaction("alpha", "ses_0001", "c", at(10), at(15))


def test_only_the_claimer_deletes_a_claimed_unchanged_session(store: SessionStore) -> None:
    store.create("alpha", session(1), [])
    store.append("alpha", "ses_0001", [("user", "x")], at(2))
    claimed = store.claim_for_compaction("alpha", "ses_0001", "me", at(10), at(15))

    assert store.delete_compacted("alpha", "ses_0001", "other", claimed.updated_at) is False
    assert store.delete_compacted("alpha", "ses_0001", "me", at(3)) is False  # changed since
    assert store.delete_compacted("alpha", "ses_0001", "me", claimed.updated_at) is True
    assert store.get("alpha", "ses_0001") is None
    assert store.messages("alpha", "ses_0001") == []


def test_a_session_active_after_its_claim_is_not_deleted(store: SessionStore) -> None:
    store.create("alpha", session(1), [])
    claimed = store.claim_for_compaction("alpha", "ses_0001", "me", at(10), at(15))
    store.append("alpha", "ses_0001", [("user", "still here")], at(11))

    assert store.delete_compacted("alpha", "ses_0001", "me", claimed.updated_at) is False
    store.release_compaction("alpha", "ses_0001", "me")

    current = store.get("alpha", "ses_0001")
    assert current is not None
    assert (current.compacting_by, current.message_count) == (None, 1)


def test_release_drops_only_the_callers_claim(store: SessionStore) -> None:
    store.create("alpha", session(1), [])
    store.claim_for_compaction("alpha", "ses_0001", "me", at(10), at(15))
    store.release_compaction("alpha", "ses_0001", "someone-else")
    current = store.get("alpha", "ses_0001")
    assert current is not None
    assert current.compacting_by == "me"


def test_model_choices_are_per_team_persona_and_wallet(store: SessionStore) -> None:
    opus = ModelInfo(id="claude-opus-4-5", name="Claude Opus 4.5", provider="anthropic")
    gpt = ModelInfo(id="gpt-4o", name="GPT-4o", provider="openai")
    team_default = ModelChoice(persona="hecate", model=opus, chosen_by="a", chosen_at=T0)
    for_wallet = ModelChoice(
        persona="hecate", wallet_address=WALLET, model=gpt, chosen_by="a", chosen_at=T0
    )
    store.put_model("alpha", team_default)
    store.put_model("alpha", for_wallet)

    assert store.get_model("alpha", "hecate", None) == team_default
    assert store.get_model("alpha", "hecate", WALLET) == for_wallet
    assert store.get_model("alpha", "moros", WALLET) is None
    assert store.get_model("beta", "hecate", None) is None
    replaced = team_default.model_copy(update={"model": gpt})
    store.put_model("alpha", replaced)
    assert store.get_model("alpha", "hecate", None) == replaced


def own_store(backend: Backend) -> SessionStore:
    """A store as another process (or Lambda) would open it: on SQLite a connection of its
    own; on DynamoDB another client of the same table."""
    return SqliteSessionStore(backend.database()) if backend.is_sqlite else build_session_store()


@pytest.mark.usefixtures("atomic_moto")
def test_racing_appends_never_number_two_messages_alike(backend: Backend) -> None:
    own_store(backend).create("alpha", session(1), [])
    errors: list[BaseException] = []

    def append(worker: int) -> None:
        store = own_store(backend)
        try:
            for n in range(10):
                store.append("alpha", "ses_0001", [("user", f"{worker}-{n}")], at(5))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=append, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    messages = own_store(backend).messages("alpha", "ses_0001")
    assert errors == []
    assert [m.seq for m in messages] == list(range(1, 41))
    assert len({m.content for m in messages}) == 40


@pytest.mark.usefixtures("atomic_moto")
def test_racing_claims_have_exactly_one_winner(backend: Backend) -> None:
    own_store(backend).create("alpha", session(1), [])
    winners: list[str] = []
    start = threading.Barrier(6)

    def claim(name: str) -> None:
        store = own_store(backend)
        start.wait()
        try:
            store.claim_for_compaction("alpha", "ses_0001", name, at(10), at(15))
        except CompactionLost:
            return
        winners.append(name)

    threads = [threading.Thread(target=claim, args=(f"c{i}",)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(winners) == 1


def test_the_last_messages_come_in_order(store: SessionStore) -> None:
    store.create("alpha", session(1), [])
    store.append("alpha", "ses_0001", [("user", f"m{n}") for n in range(5)], at(5))

    assert [m.content for m in store.messages("alpha", "ses_0001", last=2)] == ["m3", "m4"]
    assert [m.seq for m in store.messages("alpha", "ses_0001", last=10)] == [1, 2, 3, 4, 5]


def test_a_pin_made_while_an_append_is_in_flight_is_kept(backend: Backend) -> None:
    """An append reads the session and writes it back: a pin (or an unpin) landing between
    the read and the write must not be undone by it."""
    if backend.is_sqlite:
        pytest.skip("SQLite reads and writes an append in one BEGIN IMMEDIATE: no window")
    store = own_store(backend)
    store.create("alpha", session(1), [])
    other = own_store(backend)
    original = store.get
    pinned_once: list[bool] = []

    def get_then_pin(team: str, session_id: str) -> Session | None:
        seen = original(team, session_id)
        if not pinned_once:  # the first read of the append: pin it before the append writes
            pinned_once.append(True)
            other.set_pinned(team, session_id, True)
        return seen

    store.get = get_then_pin  # type: ignore[method-assign]
    store.append("alpha", "ses_0001", [("user", "hello")], at(5))

    current = other.get("alpha", "ses_0001")
    assert current is not None
    assert (current.pinned, current.message_count) == (True, 1)


def principal(team: str = "alpha") -> Principal:
    return Principal(team=team, token_id="tok", token_name="t", scopes=frozenset({"admin"}))


@pytest.mark.usefixtures("atomic_moto")
def test_two_cleanups_racing_compact_each_session_exactly_once(backend: Backend) -> None:
    """Two cleanups list the same twelve sessions (a barrier holds each after its listing),
    then claim, summarise and delete at once, each on a store of its own: each of the seven
    old sessions is summarised into exactly one summary engram and deleted once, and the five
    most recent stay."""
    setup = build_session_service()
    ids = [
        setup.append(
            principal(),
            persona="hecate",
            wallet=WALLET,
            session_id=None,
            messages=[("user", f"turn {n}")],
        )[0].id
        for n in range(12)
    ]
    engrams = MemoryEngrams(build_memory_service())
    listed_both = threading.Barrier(2, timeout=30)
    results: list[Cleanup] = []
    errors: list[BaseException] = []

    def clean() -> None:
        store = own_store(backend)
        original = store.list_owner

        def list_then_wait(*args: Any, **kwargs: Any) -> Any:
            page = original(*args, **kwargs)
            listed_both.wait()
            return page

        store.list_owner = list_then_wait  # type: ignore[method-assign]
        service = SessionService(store, engrams, build_model_catalog)
        try:
            results.append(service.cleanup(principal(), persona="hecate", wallet=WALLET))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=clean) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    compacted = [s.id for result in results for s in result.compacted]
    assert sorted(compacted) == sorted(ids[:7])  # each once, none twice
    summaries = [result.summary for result in results if result.summary is not None]
    summarised = [s["id"] for summary in summaries for s in json.loads(summary.content)["sessions"]]
    assert sorted(summarised) == sorted(ids[:7])
    stored = build_memory_service().engrams(
        principal(), wallet_address=WALLET, engram_type="knowledge", tags=["session-summary"]
    )
    assert sorted(m.id for m in stored) == sorted(s.id for s in summaries)
    remaining = setup.list_sessions(principal(), persona="hecate", wallet=WALLET, limit=50)
    assert sorted(s.id for s in remaining) == sorted(ids[7:])
