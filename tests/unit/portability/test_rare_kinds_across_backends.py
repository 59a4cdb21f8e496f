"""The kinds `test_across_backends` does not seed through the tools (curator findings, budget
crossings, CI runs, lessons, sync runs, connectors with their item versions, token contexts),
written through each store's port on both backends: the DynamoDB export turns the adapters'
items into the very rows SQLite holds, and importing those rows into DynamoDB writes back the
adapters' very items."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from shared import runtime
from shared.auth.contexts import TeamContext
from shared.auth.wiring import build_token_store
from shared.config.settings import Settings
from shared.config.tables import ALL_TABLES
from shared.connectors.models import ConnectorRecord, FolderSettings
from shared.knowledge.models import CiRun, LessonKey, LessonOccurrence
from shared.knowledge.wiring import build_stores
from shared.memory.models import Finding
from shared.memory.wiring import build_finding_store
from shared.orchestrator.costs.ports import BudgetCrossing
from shared.orchestrator.costs.wiring import build_cost_ledger
from shared.portability.wiring import build_team_data
from shared.storage.team_data_dynamo import DynamoTeamData
from shared.sync.models import SyncRun
from shared.sync.wiring import build_connector_store, build_sync_state
from tests.fake_aws import fake_aws

TEAM = "acme"
AT = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def write_rare_kinds() -> None:
    """One record of each rare kind, through the ports of the configured backend."""
    build_finding_store().add(
        TEAM, Finding(id="fnd_1", kind="duplicate", members=["mem_1", "mem_2"], detected_at=AT)
    )
    build_cost_ledger().mark_over_budget(TEAM, BudgetCrossing("day:5", AT, AT + timedelta(hours=3)))
    knowledge = build_stores()
    knowledge.put_run(TEAM, CiRun(repo="acme/app", run_id="77", sha="abc", updated_at=1_000))
    knowledge.record_occurrence(
        TEAM,
        LessonOccurrence(
            key=LessonKey(repo="acme/app", tool="ruff", rule_id="E501", path_prefix="src/"),
            id="o1",
            summary="line too long",
            fix_hint="wrap it",
            seen_at=2_000,
        ),
    )
    build_sync_state().put_run(
        TEAM, SyncRun(run_id="run_1", kind="sync", requested_by="tok_1", created_at=AT)
    )
    connectors = build_connector_store()
    connectors.add(
        TEAM,
        ConnectorRecord(
            name="notes", kind="folder", settings=FolderSettings(path="/notes"), created_at=AT
        ),
    )
    connectors.update_item_versions(TEAM, "notes", {"a.md": "v1", "b.md": "v2"}, [])
    build_token_store().put_context(
        TEAM, TeamContext(name="agent", tools=("recall", "remember"), updated_at=AT)
    )


@contextlib.contextmanager
def on(storage: str, data_dir: Path) -> Iterator[None]:
    guard = fake_aws() if storage == "dynamodb" else contextlib.nullcontext()
    with guard:
        runtime.configure(Settings(environment="test", storage=storage, data_dir=data_dir))
        try:
            yield
        finally:
            runtime.configure(Settings())


def rows(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Records with their JSON text columns parsed (key order is each writer's), sorted."""
    for record in records:
        for column in ("record", "body", "seen_ids"):
            if isinstance(record.get("row", {}).get(column), str):
                record["row"][column] = json.loads(record["row"][column])
    return sorted(records, key=lambda r: json.dumps(r, sort_keys=True))


def raw_items() -> list[dict[str, Any]]:
    tables = {spec.logical_id: runtime.table(spec.logical_id) for spec in ALL_TABLES}
    return sorted(
        DynamoTeamData(tables).export_team(TEAM), key=lambda r: json.dumps(r, sort_keys=True)
    )


@pytest.mark.moto
def test_rare_kinds_are_the_same_rows_and_items_on_both_backends(tmp_path: Path) -> None:
    with on("sqlite", tmp_path / "sqlite"):
        write_rare_kinds()
        from_sqlite = list(build_team_data().export_team(TEAM))
    assert len(from_sqlite) == 9

    with on("dynamodb", tmp_path / "dynamodb"):
        write_rare_kinds()
        data = build_team_data()
        assert rows(list(data.export_team(TEAM))) == rows(json.loads(json.dumps(from_sqlite)))
        written = raw_items()
        data.delete_team(TEAM)
        assert data.import_records(TEAM, from_sqlite) == 9
        assert raw_items() == written
