"""The knowledge stores' contract (events, nodes, entities, CI runs and lessons), on DynamoDB
(moto) and SQLite alike."""

from __future__ import annotations

import pytest

from shared.knowledge.models import (
    CiRun,
    EntitySighting,
    Event,
    KnowledgeNode,
    LessonKey,
    LessonOccurrence,
)
from shared.knowledge.ports import KnowledgeStores
from shared.knowledge.wiring import build_stores
from tests.unit.storage.conftest import Backend

T0 = 1_800_000_000_000


def event(number: int, **fields: object) -> Event:
    values: dict[str, object] = {
        "id": f"e{number:04d}",
        "source": "shell",
        "timestamp": T0 + number * 1000,
        "command": f"echo {number}",
        "cwd": "/src/app",
        "git_repo": "acme/app",
    }
    values.update(fields)
    return Event.model_validate(values)


def node(uuid: str, captured_at: int, key: str = "shell||/src/app") -> KnowledgeNode:
    return KnowledgeNode(
        uuid=uuid, summary=f"node {uuid}", captured_at=captured_at, session_key=key
    )


@pytest.fixture
def stores(backend: Backend) -> KnowledgeStores:
    return build_stores()


def test_events_are_stored_once_per_id_and_team(stores: KnowledgeStores) -> None:
    assert stores.put_new("alpha", [event(1), event(2)]) == ["e0001", "e0002"]
    assert stores.put_new("alpha", [event(2, command="changed"), event(3)]) == ["e0003"]
    assert stores.put_new("beta", [event(1)]) == ["e0001"]
    assert [e.command for e in stores.get_many("alpha", ["e0002", "e0009", "e0001"])] == [
        "echo 2",
        "echo 1",
    ]
    assert stores.get_many("gamma", ["e0001"]) == []


def test_recent_events_are_newest_first_within_the_window(stores: KnowledgeStores) -> None:
    stores.put_new("alpha", [event(n) for n in range(1, 8)])
    stores.put_new("beta", [event(9)])
    assert [e.id for e in stores.recent("alpha")] == [f"e{n:04d}" for n in range(7, 0, -1)]
    assert [e.id for e in stores.recent("alpha", since_ms=T0 + 5000)] == [
        "e0007",
        "e0006",
        "e0005",
    ]
    assert len(list(stores.recent("alpha", cap=2))) == 2


def test_projects_keep_the_latest_activity(stores: KnowledgeStores) -> None:
    stores.put_new("alpha", [event(5), event(1), event(2, cwd="/src/web", git_repo="acme/web")])
    stores.put_new("alpha", [event(3, source="browser", url="https://x.io", command=None)])
    projects = stores.projects("alpha", 10)
    assert [(p.git_repo, p.cwd_root, p.last_seen) for p in projects] == [
        ("acme/app", "/src/app", T0 + 5000),
        ("acme/web", "/src/web", T0 + 2000),
    ]
    assert stores.projects("beta", 10) == []


def test_nodes_replace_by_uuid_and_sessions_find_the_newest(stores: KnowledgeStores) -> None:
    stores.put("alpha", node("kn_a", T0))
    stores.put("alpha", node("kn_b", T0 + 60_000))
    stores.put("alpha", node("kn_a", T0 + 1000).model_copy(update={"summary": "updated"}))
    assert [n.summary for n in stores.get_nodes("alpha", ["kn_a"])] == ["updated"]
    found = stores.open_session("alpha", "shell||/src/app", T0)
    assert found is not None
    assert found.uuid == "kn_b"
    assert stores.open_session("alpha", "shell||/src/app", T0 + 120_000) is None
    assert stores.open_session("beta", "shell||/src/app", 0) is None
    assert [n.uuid for n in stores.recent_nodes("alpha")] == ["kn_b", "kn_a"]
    assert stores.get_nodes("beta", ["kn_a"]) == []


def test_entities_merge_first_and_last_seen_and_places(stores: KnowledgeStores) -> None:
    def seen(at: int, place: str) -> EntitySighting:
        return EntitySighting(type="tool", name="Cargo", canonical="cargo", seen_at=at, place=place)

    stores.record("alpha", [seen(T0 + 5, "/a"), seen(T0 + 1, "/b")])
    stores.record("alpha", [seen(T0 + 9, "/c")])
    stores.record("alpha", [EntitySighting(type="file", name="x.py", canonical="x.py", seen_at=T0)])
    tools = stores.entities("alpha", entity_type="tool")
    assert len(tools) == 1
    assert (tools[0].first_seen, tools[0].last_seen) == (T0 + 1, T0 + 9)
    assert set(tools[0].places) == {"/a", "/b", "/c"}
    assert [e.canonical for e in stores.entities("alpha")] == ["cargo", "x.py"]
    assert stores.entities("beta") == []


def test_the_latest_run_by_sha_prefix_or_branch(stores: KnowledgeStores) -> None:
    def run(run_id: str, sha: str, branch: str, updated: int) -> CiRun:
        return CiRun(repo="acme/app", run_id=run_id, sha=sha, branch=branch, updated_at=updated)

    stores.put_run("alpha", run("1", "abc111", "main", T0))
    stores.put_run("alpha", run("2", "def222", "feat", T0 + 10))
    stores.put_run("alpha", run("3", "abc333", "main", T0 + 5))
    stores.put_run("alpha", run("3", "abc333", "main", T0 + 1).model_copy(update={"status": "old"}))
    latest = stores.latest_run("alpha", "acme/app")
    assert latest is not None
    assert latest.run_id == "2"
    by_sha = stores.latest_run("alpha", "acme/app", sha="abc1")
    assert by_sha is not None
    assert by_sha.run_id == "1"
    by_branch = stores.latest_run("alpha", "acme/app", branch="main")
    assert by_branch is not None
    assert by_branch.run_id == "3"
    assert by_branch.status == ""  # the older delivery did not overwrite the newer one
    assert stores.latest_run("beta", "acme/app") is None
    assert stores.get_run("alpha", "acme/app", "2") is not None


def test_a_lesson_graduates_at_two_distinct_occurrences(stores: KnowledgeStores) -> None:
    key = LessonKey(repo="acme/app", tool="ruff", rule_id="F401", path_prefix="src/")

    def occur(occurrence: str, at: int) -> int:
        lesson = stores.record_occurrence(
            "alpha",
            LessonOccurrence(
                key=key, id=occurrence, summary="unused import", fix_hint="", seen_at=at
            ),
        )
        return lesson.occurrences

    assert occur("run:1", T0) == 1
    assert stores.lessons("alpha") == []
    assert occur("run:1", T0 + 1) == 1  # the same run redelivered counts once
    assert occur("run:2", T0 + 2) == 2
    graduated = stores.lessons("alpha")
    assert [(g.tool, g.rule_id, g.occurrences) for g in graduated] == [("ruff", "F401", 2)]
    assert (graduated[0].first_seen_at, graduated[0].last_seen_at) == (T0, T0 + 2)
    assert stores.lessons("beta") == []
