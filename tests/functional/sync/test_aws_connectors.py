"""Connectors on the AWS path (moto): the registry in the sync table, an S3 prefix read with
the runner's client, and a git repository whose token comes from Secrets Manager, through the
gateway's sync, search and sync_status tools; a folder kind is refused outside local mode."""

from __future__ import annotations

from pathlib import Path

import boto3
import pytest

from shared.app.sync_service import build_sync_service
from shared.config.settings import Settings
from shared.sync.adapters.dynamodb_connectors import DynamoConnectorStore
from shared.sync.wiring import build_connector_store
from shared.tools.errors import InvalidArgument
from tests.functional.conftest import Harness, no_error
from tests.functional.sync.conftest import GitRepo


def test_an_s3_prefix_syncs_incrementally_by_etag(
    harness: Harness, aws: Settings, bucket: str, tmp_path: Path
) -> None:
    s3 = boto3.client("s3", region_name=aws.region)
    s3.create_bucket(Bucket="acme-wiki")
    s3.put_object(Bucket="acme-wiki", Key="wiki/ops/pager.md", Body=b"# Pager\n\nMondays.\n")
    s3.put_object(Bucket="acme-wiki", Key="wiki/ferry.txt", Body=b"The ferry leaves at nine.")
    s3.put_object(Bucket="acme-wiki", Key="wiki/photo.jpg", Body=b"\xff\xd8\xff\0\0binary")
    s3.put_object(Bucket="acme-wiki", Key="other/skip.md", Body=b"not under the prefix")
    assert isinstance(build_connector_store(), DynamoConnectorStore)
    build_sync_service().connector_add(
        "alpha", name="wiki", kind="s3", config={"bucket": "acme-wiki", "prefix": "wiki/"}
    )
    token = harness.token(team="alpha")

    first = no_error(harness.call(token, "sync", {"source": "wiki"}))["connectors"][0]
    s3.put_object(Bucket="acme-wiki", Key="wiki/ops/pager.md", Body=b"# Pager\n\nFridays now.\n")
    s3.delete_object(Bucket="acme-wiki", Key="wiki/ferry.txt")
    second = no_error(harness.call(token, "sync", {"source": "wiki"}))["connectors"][0]
    found = no_error(harness.call(token, "search", {"query": "pager fridays", "source": "wiki"}))
    status = no_error(harness.call(token, "sync_status", {}))["connectors"]

    assert first["success"], first
    assert first["stats"]["entities_seen"] == 3
    assert "1 binary" in first["message"]
    assert second["stats"]["entities_tombstoned"] == 1
    assert "Found 2 files (1 changed)" in second["message"]  # the photo not read again
    assert found["results"][0]["uri"] == "s3://acme-wiki/wiki/ops/pager.md"
    (wiki,) = [c for c in status if c["source"] == "wiki"]
    assert wiki["kind"] == "s3"
    assert wiki["entities"] == 1


def test_git_with_a_secrets_manager_token_and_no_folders_in_aws(
    harness: Harness, aws: Settings, bucket: str, tmp_path: Path
) -> None:
    repo = GitRepo(tmp_path / "repo")
    repo.write({"guide.md": "# Guide\n\nThe lighthouse keeper logs the tides.\n"})
    arn = boto3.client("secretsmanager", region_name=aws.region).create_secret(
        Name="handbook-token", SecretString="s3cr3t-token"
    )["ARN"]
    service = build_sync_service()
    service.connector_add(
        "alpha", name="docs", kind="git", config={"url": repo.url, "token_secret_arn": arn}
    )
    token = harness.token(team="alpha")

    synced = no_error(harness.call(token, "sync", {}))["connectors"]
    found = no_error(harness.call(token, "search", {"query": "lighthouse tides", "source": "docs"}))

    assert [c["source"] for c in synced] == ["inbox", "docs"]
    assert synced[1]["success"], synced
    assert found["results"][0]["source"] == "docs"
    with pytest.raises(InvalidArgument) as refused:
        service.connector_add("alpha", name="notes", kind="obsidian", config={"path": "/srv"})
    assert refused.value.field == "kind"
    assert "local mode only" in str(refused.value)
    repo.close()
