"""A data folder written by the pre-SQLite cairn (moto + `dynamodb.json`) is migrated once at
start, and every record of every store reads back through the tools, with the same tokens.

The fixture was written by the real previous version (commit ee41147) through its tools; see
tests/e2e/fixtures/make_legacy_data.py.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.protocol.conftest import posted_call as _call
from tests.protocol.conftest import start_server, stop_server

FIXTURE = Path(__file__).parent / "fixtures" / "legacy-data-ee41147"
DEV_TOKEN = "cairn_sk_legacy-fixture-dev-token-0000000000"


def _structured(result: dict[str, object]) -> Any:
    assert not result.get("isError"), result
    return result["structuredContent"]


@pytest.mark.protocol
def test_an_old_data_folder_is_migrated_once_and_reads_back_whole(tmp_path: Path) -> None:
    data = tmp_path / "data"
    shutil.copytree(FIXTURE, data)
    expected = json.loads((data / "expected.json").read_text())

    server = start_server(data, dev_token=DEV_TOKEN)
    try:
        url = server.url
        memory = _structured(_call(url, DEV_TOKEN, "memory_get", {"key": "deploy-freeze"}))
        assert memory["memory"] == expected["memory_put"]["memory"]
        recalled = _structured(_call(url, DEV_TOKEN, "recall", {"include_ids": True}))
        assert expected["remember"]["memory_id"] in json.dumps(recalled)
        engram = _structured(
            _call(url, DEV_TOKEN, "engram_get", {"wallet_address": "0xabc", "key": "ui.theme"})
        )
        assert engram["engram"]["id"] == expected["engram"]["engram"]["id"]
        handoffs = _structured(_call(url, DEV_TOKEN, "list_handoffs", {}))
        assert [h["id"] for h in handoffs["handoffs"]] == [
            expected["handoff_open"]["handoff"]["id"]
        ]
        task_id = expected["task"]["id"]
        task = _structured(_call(url, DEV_TOKEN, "task.get", {"task_id": task_id}))
        assert task["task"]["status"] == "claimed"
        assert task["task"]["claimed_by"] == expected["task_claimed"]["task"]["claimed_by"]
        agents = _structured(_call(url, DEV_TOKEN, "agent.list", {}))
        assert [a["agent_id"] for a in agents["agents"]] == [expected["agent"]["agent_id"]]
        artifact_id = expected["artifact"]["artifact"]["artifact_id"]
        artifact = _structured(
            _call(
                url,
                DEV_TOKEN,
                "artifact.get",
                {"artifact_id": artifact_id, "include_content": True},
            )
        )
        assert artifact["artifact"]["content"] == "build log line"
        # Events and cost reports age out of event.poll (7 days) and cost periods: they are
        # counted in the database by the test below instead, so this test stays true later.
        # The agent's minted token and another team's token still work, each in its own team.
        agent_token = expected["agent"]["token"]
        mine = _structured(_call(url, agent_token, "task.get", {"task_id": task_id}))
        assert mine["task"]["id"] == task_id
        acme = expected["acme_token"]
        found = _structured(_call(url, acme, "memory_get", {"key": "acme-only"}))
        assert found["memory"]["content"] == "acme's memory"
        assert (
            _structured(_call(url, acme, "memory_get", {"key": "deploy-freeze"}))["memory"] is None
        )
    finally:
        output = stop_server(server)
    assert "migrated" in output
    assert not (data / "dynamodb.json").exists()
    assert (data / "dynamodb.json.migrated").exists()

    # A second start reads the database, not the snapshot, and says nothing of migration.
    again = start_server(data, dev_token=DEV_TOKEN)
    try:
        memory = _structured(_call(again.url, DEV_TOKEN, "memory_get", {"key": "deploy-freeze"}))
        assert memory["memory"] == expected["memory_put"]["memory"]
    finally:
        output = stop_server(again)
    assert "migrated" not in output


def test_an_interrupted_migration_can_run_again_without_duplicates(tmp_path: Path) -> None:
    """The importers insert-or-ignore: running the same snapshot twice adds nothing."""
    from shared.config.settings import Settings
    from shared.local.migration import legacy_importers, migrate_snapshot
    from shared.storage.sqlite import Database

    snapshot = tmp_path / "dynamodb.json"
    shutil.copy(FIXTURE / "dynamodb.json", snapshot)
    db = Database(tmp_path / "cairn.db")
    tables = Settings().tables
    first = migrate_snapshot(snapshot, legacy_importers(db), tables)
    shutil.copy(FIXTURE / "dynamodb.json", snapshot)
    migrate_snapshot(snapshot, legacy_importers(db), tables)
    rows = {
        table: db.connection().execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
        for table in ("memories", "handoffs", "tasks", "tokens", "events", "costs")
    }
    assert first.total >= 15
    assert rows["handoffs"] == 2
    assert rows["tasks"] == 1
    assert rows["tokens"] == 3
    assert rows["events"] == 1
    assert rows["costs"] == 1
    assert rows["memories"] == 4
    db.close()
