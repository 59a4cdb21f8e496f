"""The console's sync view in-process: the team's connectors with kind, documents, last sync,
counts and last error, read through sync_status — never a setting or a secret, never another
team's."""

from __future__ import annotations

import shutil
from pathlib import Path

import boto3

from shared.app.sync_service import build_sync_service
from shared.config.settings import Settings
from tests.console.conftest import Console
from tests.functional.conftest import ok
from tests.functional.sync.conftest import guide_repo


def test_the_sync_view_lists_the_teams_connectors_with_their_last_sync(
    console: Console, aws: Settings, tmp_path: Path
) -> None:
    boto3.client("s3", region_name=aws.region).create_bucket(Bucket=aws.artifacts_bucket)
    docs = guide_repo(tmp_path / "docs")
    gone = guide_repo(tmp_path / "gone")
    service = build_sync_service()
    service.connector_add("alpha", name="docs", kind="git", config={"url": docs.url})
    secret_arn = "arn:aws:secretsmanager:us-east-1:123456789012:secret:handbook-AbCdEf"
    service.connector_add(
        "alpha", name="wiki", kind="git", config={"url": gone.url, "token_secret_arn": secret_arn}
    )
    service.connector_add("beta", name="theirs", kind="git", config={"url": docs.url})
    gone.close()
    shutil.rmtree(tmp_path / "gone")
    alpha = console.harness.token(team="alpha")
    ok(console.harness, alpha, "sync", {})
    console.sign_in(alpha)

    page = console.client.get("/console/sync")

    assert page.status_code == 200
    text = page.text
    assert '<a href="sync" aria-current="page">Sync</a>' in text
    row = text[text.index('<td data-label="Name">docs</td>') :].split("</tr>")[0]
    assert '<td data-label="Kind">git</td>' in row
    assert '<td data-label="Documents">1</td>' in row
    assert "seen 1 · indexed 1" in row
    assert "UTC" in row  # its last sync
    failed = text[text.index('<td data-label="Name">wiki</td>') :].split("</tr>")[0]
    assert "connector &#39;wiki&#39; (git)" in failed  # the last error, named
    assert '<td data-label="Name">inbox</td>' in text
    assert "theirs" not in text  # beta's
    assert "secretsmanager" not in text
    assert str(tmp_path) not in text  # no URL or setting of a connector
    docs.close()


def test_a_token_without_the_sync_scope_sees_why_not(console: Console) -> None:
    console.sign_in(console.harness.token(scopes=("memory",)))

    page = console.client.get("/console/sync").text

    assert "Reading sync status needs the sync scope, which this token does not have." in page
