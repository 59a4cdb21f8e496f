"""The ConnectorStore contract (a team's registered connectors, their status and the versions
of the items they synced), on DynamoDB (moto) and SQLite alike."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from shared.connectors.models import ConnectorRecord, ConnectorStatus, parse_settings
from shared.sync.ports import ConnectorExists, ConnectorStore
from shared.sync.wiring import build_connector_store
from tests.unit.storage.conftest import Backend

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def store(backend: Backend) -> ConnectorStore:
    return build_connector_store()


def _git(name: str, branch: str = "main") -> ConnectorRecord:
    settings = parse_settings("git", {"url": "file:///srv/repo", "branch": branch})
    return ConnectorRecord(name=name, kind="git", settings=settings, created_at=T0)


def test_added_connectors_are_listed_by_name_for_their_team_only(store: ConnectorStore) -> None:
    store.add("alpha", _git("wiki"))
    store.add("alpha", _git("docs"))
    store.add("beta", _git("docs", branch="other"))

    assert [r.name for r in store.list("alpha")] == ["docs", "wiki"]
    assert [r.settings.model_dump()["branch"] for r in store.list("beta")] == ["other"]
    got = store.get("alpha", "docs")
    assert got is not None
    assert got.settings.model_dump()["url"] == "file:///srv/repo"
    assert store.get("gamma", "docs") is None


def test_a_taken_name_is_refused_unless_replaced_which_keeps_the_status(
    store: ConnectorStore,
) -> None:
    store.add("alpha", _git("docs"))
    status = ConnectorStatus(last_sync=T0, counts={"seen": 3}, cursor="abc")
    assert store.record_status("alpha", "docs", status)
    with pytest.raises(ConnectorExists):
        store.add("alpha", _git("docs", branch="dev"))

    store.add("alpha", _git("docs", branch="dev"), replace=True)

    got = store.get("alpha", "docs")
    assert got is not None
    assert got.settings.model_dump()["branch"] == "dev"
    assert got.status == status


def test_status_of_a_removed_connector_is_not_written(store: ConnectorStore) -> None:
    store.add("alpha", _git("docs"))
    assert store.remove("alpha", "docs")
    assert not store.remove("alpha", "docs")
    assert not store.record_status("alpha", "docs", ConnectorStatus(last_sync=T0))
    assert store.get("alpha", "docs") is None
    assert store.list("alpha") == []


def test_item_versions_are_set_replaced_forgotten_and_removed_with_the_connector(
    store: ConnectorStore,
) -> None:
    store.add("alpha", _git("docs"))
    store.add("alpha", _git("docs-2"))
    long_id = "deep/" * 300 + "note.md"  # longer than a DynamoDB sort key holds
    store.update_item_versions("alpha", "docs", {"a.md": "1", "b.md": "1", long_id: "7"}, [])
    store.update_item_versions("alpha", "docs-2", {"a.md": "9"}, [])
    store.update_item_versions("alpha", "docs", {"a.md": "2"}, ["b.md"])

    assert store.item_versions("alpha", "docs") == {"a.md": "2", long_id: "7"}
    assert store.item_versions("alpha", "docs-2") == {"a.md": "9"}
    assert store.item_versions("beta", "docs") == {}
    store.update_item_versions("alpha", "docs", {}, [long_id])
    assert store.item_versions("alpha", "docs") == {"a.md": "2"}
    store.remove("alpha", "docs")
    assert store.item_versions("alpha", "docs") == {}
    assert store.item_versions("alpha", "docs-2") == {"a.md": "9"}
