"""Seed 000's sync, sync_run, sync_status and inbox_put on moto (S3 inbox, DynamoDB state)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest

from shared.config import names
from shared.config.settings import Settings
from shared.memory.wiring import build_memory_service
from shared.sync.adapters.dynamodb import DynamoSyncState
from shared.sync.adapters.inbox import FolderInbox, S3Inbox
from shared.sync.ports import FileExists
from tests.functional.conftest import Harness, no_error


def test_inbox_put_then_sync_makes_the_content_searchable(harness: Harness, bucket: str) -> None:
    token = harness.token(team="alpha")

    put = no_error(
        harness.call(
            token,
            "inbox_put",
            {
                "content": "# Decision\nWe pick Postgres 16 for the ledger service.",
                "title": "Decision log",
                "tags": ["decisions"],
                "filename": "decision-log",
            },
        )
    )
    before = harness.call(token, "search", {"query": "ledger postgres"})["results"]
    synced = no_error(harness.call(token, "sync", {}))
    after = harness.call(token, "search", {"query": "ledger postgres"})["results"]

    assert put["path"].startswith(f"s3://{bucket}/inbox/alpha/")
    assert put["path"].endswith("_decision-log.md")
    assert before == []
    (inbox,) = synced["connectors"]
    assert inbox["source"] == "inbox"
    assert inbox["success"] is True
    assert inbox["stats"]["entities_seen"] == 1
    assert inbox["stats"]["chunks_written"] >= 1
    assert synced["memory_pruned"] == 0
    assert after[0]["entity_title"] == "Decision log"
    assert after[0]["source"] == "inbox"


def test_a_second_sync_rewrites_nothing_and_a_removed_file_is_tombstoned(
    harness: Harness, bucket: str
) -> None:
    token = harness.token(team="alpha")
    path = no_error(harness.call(token, "inbox_put", {"content": "the cafeteria opens at eight"}))[
        "path"
    ]
    no_error(harness.call(token, "sync", {}))

    again = no_error(harness.call(token, "sync", {}))["connectors"][0]["stats"]
    boto3.client("s3").delete_object(Bucket=bucket, Key=path.removeprefix(f"s3://{bucket}/"))
    removed = no_error(harness.call(token, "sync_run", {}))["connectors"][0]["stats"]

    assert again["chunks_written"] == 0
    assert removed["entities_tombstoned"] == 1
    assert harness.call(token, "search", {"query": "cafeteria"})["results"] == []


def test_sync_is_skipped_while_another_sync_holds_the_teams_lock(
    harness: Harness, bucket: str, aws: Settings
) -> None:
    token = harness.token(team="alpha")
    state = DynamoSyncState(boto3.resource("dynamodb").Table(aws.table(names.TABLE_SYNC)))
    assert state.acquire_lock("alpha", "other-sync", datetime.now(UTC), 900)

    skipped = harness.call(token, "sync", {})
    forced = harness.call(token, "sync_run", {})
    other_team = harness.call(harness.token(team="beta"), "sync", {})

    assert skipped["skipped"] is True
    assert skipped["reason"] == "lock"
    assert "connectors" not in skipped
    assert forced["connectors"][0]["success"] is True
    assert other_team["connectors"][0]["success"] is True


def test_an_expired_lock_is_taken_over_and_a_lost_lock_is_not_released(aws: Settings) -> None:
    state = DynamoSyncState(boto3.resource("dynamodb").Table(aws.table(names.TABLE_SYNC)))
    now = datetime.now(UTC)
    assert state.acquire_lock("alpha", "crashed", now - timedelta(hours=1), 900)

    assert state.acquire_lock("alpha", "second", now, 900)
    assert not state.acquire_lock("alpha", "third", now, 900)
    state.release_lock("alpha", "crashed")  # the old holder no longer owns it: no effect
    assert not state.acquire_lock("alpha", "third", now, 900)
    state.release_lock("alpha", "second")
    assert state.acquire_lock("alpha", "third", now, 900)


def test_sync_status_lists_connectors_and_sources_with_counts(
    harness: Harness, bucket: str
) -> None:
    token = harness.token(team="alpha")
    empty = no_error(harness.call(token, "sync_status", {}))["connectors"]
    no_error(harness.call(token, "inbox_put", {"content": "first note", "title": "one"}))
    no_error(harness.call(token, "inbox_put", {"content": "second note", "title": "two"}))
    no_error(harness.call(token, "sync", {}))

    status = no_error(harness.call(token, "sync_status", {}))["connectors"]

    assert empty == [{"source": "inbox", "entities": 0, "last_sync": None}]
    assert [(c["source"], c["entities"]) for c in status] == [("inbox", 2)]
    assert status[0]["last_sync"] is not None


def test_sync_prunes_expired_memories(harness: Harness, bucket: str) -> None:
    token = harness.token(team="alpha")
    soon = (datetime.now(UTC) + timedelta(seconds=1)).isoformat()
    harness.call(
        token, "memory_put", {"key": "brief", "content": "short lived", "expires_at": soon}
    )
    service = build_memory_service()
    service.clock = lambda: datetime.now(UTC).timestamp() + 5

    synced = no_error(harness.call(token, "sync", {}))

    assert synced["memory_pruned"] == 1


def test_an_unknown_source_is_an_error_naming_it(harness: Harness, bucket: str) -> None:
    result = harness.call(harness.token(), "sync", {"source": "obsidian"})

    assert result["isError"] is True
    assert result["error"]["field"] == "source"


def test_inbox_put_with_sync_immediately_is_searchable_at_once(
    harness: Harness, bucket: str
) -> None:
    token = harness.token(team="alpha")

    no_error(
        harness.call(
            token, "inbox_put", {"content": "the kiln fires on Thursdays", "sync_immediately": True}
        )
    )

    assert harness.call(token, "search", {"query": "kiln"})["results"] != []


def test_inbox_names_are_sanitised_and_never_overwritten(harness: Harness, bucket: str) -> None:
    token = harness.token(team="alpha")
    arguments = {"content": "x", "filename": "../../etc/passwd", "extension": "txt"}

    first = no_error(harness.call(token, "inbox_put", arguments))["path"]
    second = no_error(harness.call(token, "inbox_put", arguments))["path"]

    prefix = f"s3://{bucket}/inbox/alpha/"
    assert first.startswith(prefix)
    assert "/" not in first.removeprefix(prefix)
    assert first.endswith("_passwd.txt")
    assert second != first


def test_a_team_never_sees_another_teams_inbox(harness: Harness, bucket: str) -> None:
    alpha = harness.token(team="alpha")
    beta = harness.token(team="beta")
    no_error(
        harness.call(
            alpha, "inbox_put", {"content": "alpha's quarterly numbers", "sync_immediately": True}
        )
    )

    synced = no_error(harness.call(beta, "sync", {}))

    assert synced["connectors"][0]["stats"]["entities_seen"] == 0
    assert harness.call(beta, "search", {"query": "quarterly numbers"})["results"] == []


@pytest.mark.parametrize("kind", ["s3", "folder"])
def test_both_inbox_adapters_refuse_to_overwrite(kind: str, aws: Settings, tmp_path: Path) -> None:
    if kind == "s3":
        client = boto3.client("s3", region_name=aws.region)
        client.create_bucket(Bucket="inbox-test")
        inbox: Any = S3Inbox(client, "inbox-test")
    else:
        inbox = FolderInbox(tmp_path / "inbox")

    inbox.put("alpha", "a.md", "one")
    with pytest.raises(FileExists):
        inbox.put("alpha", "a.md", "two")

    assert [(f.name, f.body) for f in inbox.files("alpha")] == [("a.md", "one")]
    assert list(inbox.files("beta")) == []
