"""The HandoffStore contract, on DynamoDB (moto) and SQLite alike."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from shared.handoffs.models import Claim, Handoff
from shared.handoffs.ports import AlreadyClaimed, HandoffStore, OpenHandoffFilter, UnknownHandoff
from shared.handoffs.wiring import build_handoff_store
from shared.storage.pages import BadCursor
from tests.unit.storage.conftest import (
    OVERSIZED_TEXT,
    Backend,
    assert_refused_and_unstored,
    at_once,
    ids_of_every_page,
)

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
ANY = OpenHandoffFilter()


def handoff(number: int, **fields: object) -> Handoff:
    values: dict[str, object] = {
        "id": f"hof_{number:04d}",
        "title": f"handoff {number}",
        "document_md": "# doc",
        "created_by": "agent-a",
        "created_at": T0 + timedelta(seconds=number),
        "status": "open",
    }
    values.update(fields)
    return Handoff.model_validate(values)


def claim(agent: str) -> Claim:
    return Claim(agent_id=agent, claimed_at=T0 + timedelta(hours=1))


@pytest.fixture
def store(backend: Backend) -> HandoffStore:
    return build_handoff_store()


def test_a_created_handoff_reads_back_whole(store: HandoffStore) -> None:
    created = handoff(1, project_key="p", tags=["x", "y"], cwd="/w")
    store.create("alpha", created)
    assert store.get("alpha", created.id) == created


def test_reads_are_confined_to_the_team(store: HandoffStore) -> None:
    store.create("alpha", handoff(1))
    assert store.get("beta", "hof_0001") is None
    assert store.list_open("beta", ANY, limit=10).items == []
    with pytest.raises(UnknownHandoff):
        store.claim("beta", "hof_0001", claim("b"))


def test_a_claim_is_won_once_and_the_loser_learns_the_holder(store: HandoffStore) -> None:
    store.create("alpha", handoff(1))
    won = store.claim("alpha", "hof_0001", claim("first"))
    assert won.status == "claimed"
    assert won.claim is not None
    assert won.claim.agent_id == "first"
    with pytest.raises(AlreadyClaimed) as lost:
        store.claim("alpha", "hof_0001", claim("second"))
    assert lost.value.claim is not None
    assert lost.value.claim.agent_id == "first"
    stored = store.get("alpha", "hof_0001")
    assert stored is not None
    assert stored.claim is not None
    assert stored.claim.agent_id == "first"


def test_claiming_an_unknown_handoff_says_so(store: HandoffStore) -> None:
    with pytest.raises(UnknownHandoff):
        store.claim("alpha", "hof_nope", claim("a"))


def test_open_handoffs_list_newest_first_and_drop_claimed_ones(store: HandoffStore) -> None:
    for number in range(1, 6):
        store.create("alpha", handoff(number))
    store.claim("alpha", "hof_0004", claim("a"))
    ids = [h.id for h in store.list_open("alpha", ANY, limit=10).items]
    assert ids == ["hof_0005", "hof_0003", "hof_0002", "hof_0001"]


def test_filters_keep_only_exact_matches(store: HandoffStore) -> None:
    store.create("alpha", handoff(1, project_key="p", cwd="/a", harness="codex"))
    store.create("alpha", handoff(2, project_key="p", cwd="/b", harness="codex"))
    store.create("alpha", handoff(3, project_key="q", cwd="/a", harness="codex"))
    page = store.list_open("alpha", OpenHandoffFilter(project_key="p", cwd="/a"), limit=10)
    assert [h.id for h in page.items] == ["hof_0001"]
    page = store.list_open("alpha", OpenHandoffFilter(harness="codex"), limit=10)
    assert [h.id for h in page.items] == ["hof_0003", "hof_0002", "hof_0001"]


def test_pages_chain_without_gaps_or_repeats(store: HandoffStore) -> None:
    for number in range(1, 12):
        store.create("alpha", handoff(number, project_key="p" if number % 2 else "q"))
    seen = ids_of_every_page(
        lambda cursor: store.list_open(
            "alpha", OpenHandoffFilter(project_key="p"), limit=2, cursor=cursor
        )
    )
    assert seen == [f"hof_{n:04d}" for n in (11, 9, 7, 5, 3, 1)]


def test_the_last_page_has_no_cursor(store: HandoffStore) -> None:
    for number in range(1, 5):
        store.create("alpha", handoff(number))
    first = store.list_open("alpha", ANY, limit=2)
    assert first.next_cursor is not None
    second = store.list_open("alpha", ANY, limit=2, cursor=first.next_cursor)
    assert [h.id for h in second.items] == ["hof_0002", "hof_0001"]
    assert second.next_cursor is None


def test_a_cursor_of_another_team_is_refused(store: HandoffStore) -> None:
    for number in range(1, 4):
        store.create("alpha", handoff(number))
    cursor = store.list_open("alpha", ANY, limit=1).next_cursor
    assert cursor is not None
    with pytest.raises(BadCursor):
        store.list_open("beta", ANY, limit=1, cursor=cursor)


def test_concurrent_claims_have_exactly_one_winner(backend: Backend, store: HandoffStore) -> None:
    if not backend.is_sqlite:
        pytest.skip("moto's conditional writes are not atomic across threads (DynamoDB's are)")
    store.create("alpha", handoff(1))
    winners: list[str] = []
    losers: list[str] = []

    def race(agent: str) -> None:
        try:
            store.claim("alpha", "hof_0001", claim(agent))
            winners.append(agent)
        except AlreadyClaimed:
            losers.append(agent)

    at_once(race, (f"agent-{n}" for n in range(8)))
    assert len(winners) == 1
    assert len(losers) == 7


def test_an_old_snapshot_migrates_into_sqlite(backend: Backend, tmp_path: Path) -> None:
    """Items the DynamoDB adapter wrote read back the same from SQLite after `migrate_items`."""
    if backend.is_sqlite:
        pytest.skip("the source of a migration is the DynamoDB layout")
    from shared.config import names
    from shared.handoffs.adapters.sqlite import SqliteHandoffStore
    from shared.storage.sqlite import Database

    dynamo = build_handoff_store()
    for number in range(1, 4):
        dynamo.create("alpha", handoff(number, project_key="p"))
    dynamo.claim("alpha", "hof_0002", claim("a"))
    items = list(backend.table(names.TABLE_HANDOFFS).scan()["Items"])
    sqlite = SqliteHandoffStore(Database(tmp_path / "migrated.db"))
    assert sqlite.migrate_items([*items, {"pk": "TEAM#alpha", "sk": "OTHER#x"}]) == 3
    for number in range(1, 4):
        assert sqlite.get("alpha", f"hof_{number:04d}") == dynamo.get("alpha", f"hof_{number:04d}")
    assert [h.id for h in sqlite.list_open("alpha", ANY, limit=10).items] == [
        "hof_0003",
        "hof_0001",
    ]


def test_a_handoff_too_large_for_a_dynamodb_item_is_refused_by_both(store: HandoffStore) -> None:
    oversized = handoff(1, document_md=OVERSIZED_TEXT)
    assert_refused_and_unstored(store, oversized, "document_md")


def test_a_claim_keeps_the_claimants_own_description_beside_the_holder(
    store: HandoffStore,
) -> None:
    store.create("alpha", handoff(1))
    described = Claim(
        agent_id="agent-b",
        claiming_agent_id="claude-code:session-42",
        harness="claude-code",
        source_ref="run-42",
        cwd="/w",
        claimed_at=T0 + timedelta(hours=1),
    )

    won = store.claim("alpha", "hof_0001", described)
    with pytest.raises(AlreadyClaimed) as lost:
        store.claim("alpha", "hof_0001", claim("late"))

    assert won.claim == described
    read = store.get("alpha", "hof_0001")
    assert read is not None
    assert read.claim == described
    assert lost.value.claim == described
