"""The TeamData contract (export, import, erasure of a team), on DynamoDB (moto) and SQLite.

Real stores write the team's records through their own ports; what every read of those ports
answers is then compared before and after export → delete → import, for the team and for the
team beside it (cross-team isolation, before and after)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from shared.auth.contexts import TeamContext
from shared.auth.wiring import build_token_store
from shared.handoffs.ports import OpenHandoffFilter
from shared.handoffs.wiring import build_handoff_store
from shared.memory.wiring import build_memory_store
from shared.orchestrator.tasks.ports import TaskFilter
from shared.orchestrator.tasks.wiring import build_task_store
from shared.portability.wiring import build_team_data
from shared.sessions.wiring import build_session_store
from shared.storage.team_data import BadRecord, TeamData
from tests.unit.storage.conftest import Backend
from tests.unit.storage.test_handoff_store_contract import handoff
from tests.unit.storage.test_memory_store_contract import memory
from tests.unit.storage.test_session_store_contract import HECATE, session
from tests.unit.storage.test_task_store_contract import task
from tests.unit.storage.test_token_store_contract import T0, secret_hash, token


@pytest.fixture
def data(backend: Backend) -> TeamData:
    return build_team_data()


def seed(team: str, first: int) -> None:
    """A memory, a handoff, a task, a persona session, a token and an allow-list context of
    `team`."""
    build_memory_store().create(team, memory(first, key=f"k{first}"))
    build_handoff_store().create(team, handoff(first))
    build_task_store().create(team, task(first))
    build_session_store().create(team, session(first), [])
    build_token_store().put(secret_hash(first), token(first, team=team))
    build_token_store().put_context(
        team, TeamContext(name="agent", tools=(f"tool_{first}",), updated_at=T0)
    )


def reads(team: str) -> dict[str, Any]:
    """What every read port answers for `team` (as JSON, so it compares whole)."""
    return {
        "memories": sorted(m.model_dump_json() for m in build_memory_store().iter_team(team)),
        "handoffs": [
            h.model_dump_json()
            for h in build_handoff_store().list_open(team, OpenHandoffFilter(), limit=50).items
        ],
        "tasks": [
            t.model_dump_json()
            for t in build_task_store().list_team(team, TaskFilter(), limit=50).items
        ],
        "sessions": [
            s.model_dump_json()
            for s in build_session_store().list_owner(team, HECATE, limit=50).items
        ],
        "contexts": [
            c.model_dump_json()
            for c in [build_token_store().get_context(team, "agent")]
            if c is not None
        ],
    }


EMPTY: dict[str, list[str]] = {
    "memories": [],
    "handoffs": [],
    "tasks": [],
    "sessions": [],
    "contexts": [],
}


def test_export_holds_the_team_and_no_other_and_never_a_token_secret(data: TeamData) -> None:
    seed("alpha", 1)
    seed("beta", 2)
    records = list(data.export_team("alpha"))
    text = json.dumps(records)
    assert "hof_0001" in text
    assert "tsk_0001" in text
    assert "ses_0001" in text
    assert "hof_0002" not in text  # beta's
    assert secret_hash(1) not in text
    tokens = [r for r in records if r["kind"] == "token"]
    assert [(t["token_id"], t["name"], t["scopes"]) for t in tokens] == [
        ("tok_0001", "token 1", ["memory", "search"])
    ]


def test_delete_empties_every_read_of_the_team_and_leaves_the_other(data: TeamData) -> None:
    seed("alpha", 1)
    seed("beta", 2)
    beta = reads("beta")
    assert reads("alpha") != EMPTY

    counts = data.delete_team("alpha")

    assert counts["token"] == 1
    assert sum(counts.values()) >= 5
    assert reads("alpha") == EMPTY
    assert build_token_store().list_team("alpha") == []
    assert reads("beta") == beta
    assert [t.token_id for t in build_token_store().list_team("beta")] == ["tok_0002"]
    assert data.delete_team("alpha") == {}  # nothing left


def test_export_delete_import_brings_every_record_back_and_twice_changes_nothing(
    data: TeamData,
) -> None:
    seed("alpha", 1)
    seed("beta", 2)
    alpha, beta = reads("alpha"), reads("beta")
    records = list(data.export_team("alpha"))
    data.delete_team("alpha")

    written = data.import_records("alpha", records, "alpha")

    assert written == len(records) - 1  # all but the token, which is never restored
    assert reads("alpha") == alpha
    assert reads("beta") == beta
    assert build_token_store().list_team("alpha") == []
    assert data.import_records("alpha", records, "alpha") == 0
    assert reads("alpha") == alpha


def test_an_import_under_another_name_is_that_teams_alone(data: TeamData) -> None:
    seed("alpha", 1)
    alpha = reads("alpha")
    data.import_records("gamma", list(data.export_team("alpha")), "alpha")
    assert reads("gamma") == alpha
    assert reads("alpha") == alpha
    data.delete_team("alpha")
    assert reads("gamma") == alpha


def test_a_record_of_no_store_is_refused_naming_its_kind(data: TeamData) -> None:
    with pytest.raises(BadRecord, match="nonsense"):
        data.check_record({"kind": "nonsense", "row": {}, "item": {"pk": "x", "sk": "y"}})
    with pytest.raises(BadRecord):
        data.import_records("alpha", [{"kind": "nonsense"}], "alpha")
    assert reads("alpha") == EMPTY


def test_events_past_their_retention_stay_behind(data: TeamData) -> None:
    from shared.orchestrator.events.wiring import build_event_log
    from tests.unit.storage.test_event_log_contract import LONG_AGO, event

    log = build_event_log()
    log.append("alpha", event(1))
    log.append("alpha", event(2, published_at=LONG_AGO))
    text = json.dumps(list(data.export_team("alpha")))
    assert "evt-0001" in text
    assert "evt-0002" not in text
