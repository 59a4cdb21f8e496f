"""The ArtifactRecords contract, on DynamoDB (moto) and SQLite alike."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from shared.orchestrator.artifacts.models import Artifact
from shared.orchestrator.artifacts.ports import ArtifactRecords
from shared.orchestrator.artifacts.wiring import build_artifact_records
from tests.unit.storage.conftest import Backend

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def artifact(number: int, task_id: str = "tsk_1", **fields: object) -> Artifact:
    values: dict[str, object] = {
        "artifact_id": f"art_{number:04d}",
        "task_id": task_id,
        "name": f"report-{number}.md",
        "artifact_type": "report",
        "mime_type": "text/markdown",
        "metadata": {"pages": 3, "score": 0.75},
        "size_bytes": 120 + number,
        "sha256": "ab" * 32,
        "storage": f"/data/artifacts/alpha/art_{number:04d}",
        "created_by": "agent-a",
        "created_at": T0 + timedelta(seconds=number),
    }
    values.update(fields)
    return Artifact.model_validate(values)


@pytest.fixture
def records(backend: Backend) -> ArtifactRecords:
    return build_artifact_records()


def ids(found: object) -> list[str]:
    assert isinstance(found, list)
    return [a.artifact_id for a in found]


def test_a_created_record_reads_back_whole(records: ArtifactRecords) -> None:
    created = artifact(1, workflow_id="wf_1", role="output")
    by_url = artifact(
        2, size_bytes=None, sha256=None, storage=None, content_url="https://x.test/r.md"
    )
    records.create("alpha", created)
    records.create("alpha", by_url)
    assert records.get("alpha", "art_0001") == created
    assert records.get("alpha", "art_0002") == by_url
    assert records.get("alpha", "art_nope") is None


def test_reads_are_confined_to_the_team(records: ArtifactRecords) -> None:
    records.create("alpha", artifact(1, workflow_id="wf_1"))
    assert records.get("beta", "art_0001") is None
    assert list(records.iter_team("beta", task_id="tsk_1", workflow_id=None)) == []
    assert list(records.iter_team("beta", task_id=None, workflow_id="wf_1")) == []


def test_listings_keep_exact_matches_of_every_filter_in_id_order(
    records: ArtifactRecords,
) -> None:
    records.create("alpha", artifact(3, task_id="tsk_1", workflow_id="wf_1"))
    records.create("alpha", artifact(1, task_id="tsk_1"))
    records.create("alpha", artifact(2, task_id="tsk_2", workflow_id="wf_1"))
    records.create("alpha", artifact(4, task_id="tsk_10", workflow_id="wf_10"))

    def listed(task_id: str | None, workflow_id: str | None) -> list[str]:
        return ids(list(records.iter_team("alpha", task_id=task_id, workflow_id=workflow_id)))

    assert listed("tsk_1", None) == ["art_0001", "art_0003"]
    assert listed(None, "wf_1") == ["art_0002", "art_0003"]
    assert listed("tsk_1", "wf_1") == ["art_0003"]
    assert listed("tsk_2", "wf_10") == []
    assert listed(None, None) == ["art_0001", "art_0002", "art_0003", "art_0004"]


def test_an_old_snapshot_migrates_into_sqlite(backend: Backend, tmp_path: Path) -> None:
    """Items the DynamoDB adapter wrote read back the same from SQLite after `migrate_items`."""
    if backend.is_sqlite:
        pytest.skip("the source of a migration is the DynamoDB layout")
    from shared.config import names
    from shared.orchestrator.artifacts.sqlite import SqliteArtifactRecords
    from shared.storage.sqlite import Database

    dynamo = build_artifact_records()
    dynamo.create("alpha", artifact(1, workflow_id="wf_1"))
    dynamo.create("alpha", artifact(2, task_id="tsk_2"))
    dynamo.create("beta", artifact(3))
    items = list(backend.table(names.TABLE_COORDINATION).scan()["Items"])
    sqlite = SqliteArtifactRecords(Database(tmp_path / "migrated.db"))
    assert sqlite.migrate_items([*items, {"pk": "TEAM#alpha", "sk": "AGENT#x"}]) == 3
    for team, number in (("alpha", 1), ("alpha", 2), ("beta", 3)):
        assert sqlite.get(team, f"art_{number:04d}") == dynamo.get(team, f"art_{number:04d}")
    for task_id, workflow_id in (("tsk_1", None), (None, "wf_1"), ("tsk_2", None)):
        assert list(sqlite.iter_team("alpha", task_id=task_id, workflow_id=workflow_id)) == list(
            dynamo.iter_team("alpha", task_id=task_id, workflow_id=workflow_id)
        )
