"""The AgentStore contract, on DynamoDB (moto) and SQLite alike."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from shared.orchestrator.agents.models import DEREGISTERED, AgentRecord
from shared.orchestrator.agents.ports import AgentChanges, AgentStore, NameTaken, UnknownAgent
from shared.orchestrator.agents.wiring import build_agent_store
from tests.unit.storage.conftest import Backend, at_once

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def agent(number: int, name: str = "builder", **fields: object) -> AgentRecord:
    values: dict[str, object] = {
        "agent_id": f"agt_{number:04d}",
        "name": name,
        "agent_type": "codex",
        "capabilities": ["python"],
        "status": "active",
        "max_concurrent_tasks": 3,
        "metadata": {"ratio": 0.5, "nested": {"n": 1}},
        "created_at": T0 + timedelta(seconds=number),
        "created_by": "registrar",
        "token_id": f"tok_{number:04d}",
        "scopes": ["task.execute"],
    }
    values.update(fields)
    return AgentRecord.model_validate(values)


@pytest.fixture
def store(backend: Backend) -> AgentStore:
    return build_agent_store()


def test_a_created_agent_reads_back_by_id_and_by_name(store: AgentStore) -> None:
    created = agent(1, default_model="gpt", last_heartbeat=T0)
    store.create("alpha", created)
    assert store.get("alpha", "agt_0001") == created
    assert store.get_by_name("alpha", "builder") == created


def test_reads_and_writes_are_confined_to_the_team(store: AgentStore) -> None:
    store.create("alpha", agent(1))
    assert store.get("beta", "agt_0001") is None
    assert store.get_by_name("beta", "builder") is None
    assert list(store.iter_team("beta")) == []
    with pytest.raises(UnknownAgent):
        store.update("beta", "agt_0001", AgentChanges(status="busy"))
    with pytest.raises(UnknownAgent):
        store.deregister("beta", "agt_0001", T0)
    store.create("beta", agent(2))  # the same name is free in another team
    stored = store.get("alpha", "agt_0001")
    assert stored is not None
    assert stored.status == "active"


def test_a_taken_name_names_its_holder_and_writes_nothing(store: AgentStore) -> None:
    store.create("alpha", agent(1))
    with pytest.raises(NameTaken) as taken:
        store.create("alpha", agent(2))
    assert taken.value.holder == "agt_0001"
    assert store.get("alpha", "agt_0002") is None


def test_replacing_retires_the_old_agent_in_the_same_write(store: AgentStore) -> None:
    old = agent(1)
    store.create("alpha", old)
    new = agent(2)
    store.create("alpha", new, replacing=old)
    retired = store.get("alpha", "agt_0001")
    assert retired is not None
    assert retired.status == DEREGISTERED
    assert retired.deregistered_at == new.created_at
    assert retired.replaced_by == "agt_0002"
    assert store.get_by_name("alpha", "builder") == new


def test_replacing_an_agent_that_no_longer_holds_the_name_loses(store: AgentStore) -> None:
    first = agent(1)
    store.create("alpha", first)
    store.create("alpha", agent(2), replacing=first)
    with pytest.raises(NameTaken) as taken:
        store.create("alpha", agent(3), replacing=first)  # a stale view: agt_0002 holds it
    assert taken.value.holder == "agt_0002"
    assert store.get("alpha", "agt_0003") is None
    with pytest.raises(NameTaken) as free:
        store.create("alpha", agent(4, name="nobody"), replacing=first)
    assert free.value.holder is None


def test_update_sets_only_the_given_fields_of_an_active_agent(store: AgentStore) -> None:
    store.create("alpha", agent(1))
    store.update(
        "alpha", "agt_0001", AgentChanges(status="busy", last_heartbeat=T0 + timedelta(hours=1))
    )
    store.update("alpha", "agt_0001", AgentChanges(capabilities=["go", "rust"]))
    stored = store.get("alpha", "agt_0001")
    assert stored is not None
    assert (stored.status, stored.last_heartbeat, stored.capabilities) == (
        "busy",
        T0 + timedelta(hours=1),
        ["go", "rust"],
    )
    assert stored.metadata == {"ratio": 0.5, "nested": {"n": 1}}
    with pytest.raises(UnknownAgent):
        store.update("alpha", "agt_nope", AgentChanges(status="busy"))
    store.deregister("alpha", "agt_0001", T0 + timedelta(hours=2))
    with pytest.raises(UnknownAgent):
        store.update("alpha", "agt_0001", AgentChanges(status="busy"))


def test_deregister_keeps_the_first_time_and_frees_the_name(store: AgentStore) -> None:
    store.create("alpha", agent(1))
    first = store.deregister("alpha", "agt_0001", T0 + timedelta(hours=1))
    again = store.deregister("alpha", "agt_0001", T0 + timedelta(hours=2))
    assert first.deregistered_at == T0 + timedelta(hours=1)
    assert again.deregistered_at == T0 + timedelta(hours=1)
    assert again.status == DEREGISTERED
    assert store.get_by_name("alpha", "builder") is None
    store.create("alpha", agent(2))
    assert store.get_by_name("alpha", "builder") == agent(2)
    with pytest.raises(UnknownAgent):
        store.deregister("alpha", "agt_nope", T0)


def test_deregistering_a_replaced_agent_leaves_the_name_with_its_successor(
    store: AgentStore,
) -> None:
    old = agent(1)
    store.create("alpha", old)
    store.create("alpha", agent(2), replacing=old)
    store.deregister("alpha", "agt_0001", T0 + timedelta(hours=1))
    holder = store.get_by_name("alpha", "builder")
    assert holder is not None
    assert holder.agent_id == "agt_0002"


def test_a_retired_agent_is_gone_once_its_keeping_time_has_passed(store: AgentStore) -> None:
    now = datetime.now(UTC)
    store.create("alpha", agent(1, name="long-gone"))
    store.create("alpha", agent(2, name="recent"))
    store.deregister("alpha", "agt_0001", now - timedelta(days=40))
    store.deregister("alpha", "agt_0002", now - timedelta(days=10))
    assert store.get("alpha", "agt_0001") is None
    assert store.get("alpha", "agt_0002") is not None
    assert [a.agent_id for a in store.iter_team("alpha")] == ["agt_0002"]
    with pytest.raises(UnknownAgent):
        store.deregister("alpha", "agt_0001", now)


def test_the_team_listing_holds_every_kept_agent_in_id_order(store: AgentStore) -> None:
    for number in (3, 1, 2):
        store.create("alpha", agent(number, name=f"agent-{number}"))
    store.deregister("alpha", "agt_0002", T0)
    listed = list(store.iter_team("alpha"))
    assert [a.agent_id for a in listed] == ["agt_0001", "agt_0002", "agt_0003"]
    assert [a.is_active for a in listed] == [True, False, True]


def test_concurrent_registrations_of_one_name_have_exactly_one_winner(
    backend: Backend, store: AgentStore
) -> None:
    if not backend.is_sqlite:
        pytest.skip("moto's transactions are not atomic across threads (DynamoDB's are)")
    winners: list[str] = []
    holders: list[str | None] = []

    def race(number: int) -> None:
        try:
            store.create("alpha", agent(number))
            winners.append(f"agt_{number:04d}")
        except NameTaken as lost:
            holders.append(lost.holder)

    at_once(race, range(1, 9))
    assert len(winners) == 1
    assert holders == [winners[0]] * 7
    assert [a.agent_id for a in store.iter_team("alpha")] == winners


def test_an_old_snapshot_migrates_into_sqlite(backend: Backend, tmp_path: Path) -> None:
    """Items the DynamoDB adapter wrote read back the same from SQLite after `migrate_items`."""
    if backend.is_sqlite:
        pytest.skip("the source of a migration is the DynamoDB layout")
    from shared.config import names
    from shared.orchestrator.agents.sqlite import SqliteAgentStore
    from shared.storage.sqlite import Database

    dynamo = build_agent_store()
    old = agent(1)
    dynamo.create("alpha", old)
    dynamo.create("alpha", agent(2), replacing=old)
    dynamo.create("alpha", agent(3, name="other"))
    dynamo.create("beta", agent(4))
    items = list(backend.table(names.TABLE_COORDINATION).scan()["Items"])
    sqlite = SqliteAgentStore(Database(tmp_path / "migrated.db"))
    # Four records and three names (agt_0001 gave its name to agt_0002); the rest is ignored.
    assert sqlite.migrate_items([*items, {"pk": "TEAM#alpha", "sk": "TASK#x"}]) == 7
    for team in ("alpha", "beta"):
        assert list(sqlite.iter_team(team)) == list(dynamo.iter_team(team))
    for team, name in (("alpha", "builder"), ("alpha", "other"), ("beta", "builder")):
        assert sqlite.get_by_name(team, name) == dynamo.get_by_name(team, name)
    with pytest.raises(NameTaken):
        sqlite.create("alpha", agent(5))
