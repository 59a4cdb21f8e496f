"""The WorkflowStore contract, on DynamoDB (moto) and SQLite alike."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from shared.storage.pages import BadCursor
from shared.workflows.definition import parse_definition
from shared.workflows.models import Execution, StepState, Workflow
from shared.workflows.ports import NameTaken, StaleWrite, WorkflowStore
from shared.workflows.wiring import build_workflow_store
from tests.unit.storage.conftest import Backend

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
DEFINITION = parse_definition(
    {"steps": [{"name": "a", "inputs": {"ratio": 0.25, "n": [1, 2]}}, {"name": "b"}]}
)


def workflow(number: int, name: str | None = None) -> Workflow:
    return Workflow(
        id=f"wf_{number:04d}",
        name=name or f"flow {number}",
        definition=DEFINITION,
        created_by="boss",
        created_at=T0 + timedelta(seconds=number),
        updated_at=T0 + timedelta(seconds=number),
    )


def execution(number: int) -> Execution:
    return Execution(
        id=f"wfx_{number:04d}",
        workflow_id="wf_0001",
        version=1,
        definition=DEFINITION,
        inputs={"price": 9.99},
        steps={"a": StepState(name="a"), "b": StepState(name="b")},
        started_by="boss",
        started_at=T0,
    )


@pytest.fixture
def store(backend: Backend) -> WorkflowStore:
    return build_workflow_store()


def test_a_created_workflow_reads_back_whole_by_id_and_name(store: WorkflowStore) -> None:
    created = workflow(1)
    store.create("alpha", created)
    assert store.get("alpha", created.id) == created
    assert store.find_by_name("alpha", created.name) == created


def test_a_team_holds_one_workflow_per_name(store: WorkflowStore) -> None:
    store.create("alpha", workflow(1, "same"))
    with pytest.raises(NameTaken) as taken:
        store.create("alpha", workflow(2, "same"))
    assert taken.value.existing is not None
    assert taken.value.existing.id == "wf_0001"
    store.create("beta", workflow(3, "same"))  # another team's name space


def test_reads_are_confined_to_the_team(store: WorkflowStore) -> None:
    store.create("alpha", workflow(1))
    store.create_execution("alpha", execution(1))
    assert store.get("beta", "wf_0001") is None
    assert store.find_by_name("beta", "flow 1") is None
    assert store.get_execution("beta", "wfx_0001") is None
    assert store.list_team("beta", limit=10).items == []
    assert store.open_executions("beta") == []


def test_replace_holds_only_over_the_version_it_read(store: WorkflowStore) -> None:
    original = workflow(1)
    store.create("alpha", original)
    newer = original.model_copy(update={"version": 2, "updated_at": T0 + timedelta(hours=1)})
    store.replace("alpha", newer, original.updated_at)
    with pytest.raises(StaleWrite):
        store.replace("alpha", original, original.updated_at)
    assert store.get("alpha", original.id) == newer


def test_listing_is_newest_first_and_pages_exactly(store: WorkflowStore) -> None:
    for number in range(1, 6):
        store.create("alpha", workflow(number))
    first = store.list_team("alpha", limit=2)
    second = store.list_team("alpha", limit=2, cursor=first.next_cursor)
    third = store.list_team("alpha", limit=2, cursor=second.next_cursor)
    ids = [w.id for page in (first, second, third) for w in page.items]
    assert ids == ["wf_0005", "wf_0004", "wf_0003", "wf_0002", "wf_0001"]
    assert third.next_cursor is None
    with pytest.raises(BadCursor):
        store.list_team("beta", limit=2, cursor=first.next_cursor)


def test_an_execution_write_needs_the_revision_it_read(store: WorkflowStore) -> None:
    started = execution(1)
    store.create_execution("alpha", started)
    read = store.get_execution("alpha", started.id)
    assert read == started  # floats and nested JSON come back as written

    first = started.model_copy(update={"revision": 1, "status": "paused"})
    store.save_execution("alpha", first)
    late = started.model_copy(update={"revision": 1, "status": "cancelled"})
    with pytest.raises(StaleWrite):
        store.save_execution("alpha", late)
    assert store.get_execution("alpha", started.id) == first


def test_open_executions_are_the_running_and_paused_ones(store: WorkflowStore) -> None:
    for number, status in ((1, "running"), (2, "paused"), (3, "completed")):
        store.create_execution("alpha", execution(number).model_copy(update={"status": status}))
    found = sorted(ex.id for _, ex in store.open_executions("alpha"))
    assert found == ["wfx_0001", "wfx_0002"]
