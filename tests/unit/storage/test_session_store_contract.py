"""The SessionStore contract, on DynamoDB (moto) and SQLite alike."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest

from shared.sessions.adapters.sqlite import SqliteSessionStore
from shared.sessions.models import Message, ModelChoice, ModelInfo, Session
from shared.sessions.ports import CompactionLost, SessionPinned, SessionStore, UnknownSession
from shared.sessions.wiring import build_session_store
from shared.storage.pages import BadCursor
from tests.unit.storage.conftest import Backend

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
WALLET = "0xabc"


def session(number: int, **fields: object) -> Session:
    values: dict[str, object] = {
        "id": f"ses_{number:04d}",
        "persona": "hecate",
        "wallet_address": WALLET,
        "created_at": T0 + timedelta(minutes=number),
        "updated_at": T0 + timedelta(minutes=number),
        "created_by": "agent-a",
    }
    values.update(fields)
    return Session.model_validate(values)


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
    assert store.list_owner("beta", "hecate", WALLET, limit=10).items == []
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

    first = store.list_owner("alpha", "hecate", WALLET, limit=3)
    rest = store.list_owner("alpha", "hecate", WALLET, limit=3, cursor=first.next_cursor)

    assert [s.id for s in first.items] == ["ses_0002", "ses_0005", "ses_0004"]
    assert [s.id for s in rest.items] == ["ses_0003", "ses_0001"]
    assert rest.next_cursor is None
    assert [s.id for s in store.list_owner("alpha", "moros", WALLET, limit=10).items] == [
        "ses_0007"
    ]


def test_a_cursor_of_another_team_is_refused(store: SessionStore) -> None:
    for number in range(1, 4):
        store.create("alpha", session(number), [])
    page = store.list_owner("alpha", "hecate", WALLET, limit=1)
    assert page.next_cursor is not None
    with pytest.raises(BadCursor):
        store.list_owner("beta", "hecate", WALLET, limit=1, cursor=page.next_cursor)


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


def test_racing_appends_never_number_two_messages_alike(backend: Backend) -> None:
    if not backend.is_sqlite:
        pytest.skip("moto's transactions are not atomic across threads (DynamoDB's are)")
    SqliteSessionStore(backend.database()).create("alpha", session(1), [])
    errors: list[BaseException] = []

    def append(worker: int) -> None:
        store = SqliteSessionStore(backend.database())  # a connection of its own
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

    messages = SqliteSessionStore(backend.database()).messages("alpha", "ses_0001")
    assert errors == []
    assert [m.seq for m in messages] == list(range(1, 41))
    assert len({m.content for m in messages}) == 40


def test_racing_claims_have_exactly_one_winner(backend: Backend) -> None:
    if not backend.is_sqlite:
        pytest.skip("moto's conditional writes are not atomic across threads (DynamoDB's are)")
    SqliteSessionStore(backend.database()).create("alpha", session(1), [])
    winners: list[str] = []
    start = threading.Barrier(6)

    def claim(name: str) -> None:
        store = SqliteSessionStore(backend.database())
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
