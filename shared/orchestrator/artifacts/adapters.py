"""Artifact records in the coordination table; artifact bytes in S3 or a local folder.

- `TEAM#<team>` / `ARTIFACT#<artifact_id>`: the record (metadata, size, hash, where the bytes
  are). `metadata` is stored as a JSON string (`metadata_json`): DynamoDB has no floats, and the
  object is opaque to cairn.
- The bytes: `artifacts/<team>/<artifact_id>` in the artifacts bucket (AWS), or
  `<data_dir>/artifacts/<team>/<artifact_id>` (local mode: plain files beside the database).
  Neither ever overwrites.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from boto3.dynamodb.conditions import Attr, Key
from botocore.exceptions import ClientError

from shared.config import names
from shared.orchestrator.artifacts.models import Artifact
from shared.orchestrator.artifacts.ports import BlobExists, BlobMissing
from shared.storage.dynamo import query_all, team_pk
from shared.storage.s3 import ObjectExists, put_new

if TYPE_CHECKING:
    from boto3.dynamodb.conditions import ConditionBase
    from mypy_boto3_dynamodb.service_resource import Table
    from mypy_boto3_s3 import S3Client

ARTIFACT_PREFIX = "ARTIFACT#"
# The bucket prefix the orchestrator function is granted (and nothing else of the bucket).
BLOB_PREFIX = names.BUCKET_PREFIX_ARTIFACTS


def _key(team: str, artifact_id: str) -> dict[str, str]:
    return {"pk": team_pk(team), "sk": ARTIFACT_PREFIX + artifact_id}


def _part(value: str, what: str) -> str:
    # Teams are validated at token creation and ids are cairn's own; this keeps a key or a path
    # from ever leaving its team's prefix whatever reaches it.
    if not value or "/" in value or "\\" in value or value in {".", ".."}:
        raise ValueError(f"unusable {what} for artifact storage: {value!r}")
    return value


def artifact_from_item(item: dict[str, Any]) -> Artifact:
    """The artifact record of a stored item (also what the SQLite records' migration reads)."""
    fields = {k: v for k, v in item.items() if k in Artifact.model_fields and k != "metadata"}
    if "size_bytes" in fields:
        fields["size_bytes"] = int(fields["size_bytes"])  # DynamoDB numbers come back Decimal
    fields["metadata"] = json.loads(str(item.get("metadata_json") or "{}"))
    return Artifact.model_validate(fields)


class DynamoArtifactRecords:
    """`ArtifactRecords` on the coordination table."""

    def __init__(self, table: Table) -> None:
        self._table = table

    def create(self, team: str, artifact: Artifact) -> None:
        item = {
            **_key(team, artifact.artifact_id),
            "team": team,
            **artifact.model_dump(mode="json", exclude_none=True, exclude={"metadata"}),
            "metadata_json": json.dumps(artifact.metadata, ensure_ascii=False),
        }
        self._table.put_item(Item=item, ConditionExpression="attribute_not_exists(pk)")

    def get(self, team: str, artifact_id: str) -> Artifact | None:
        item = self._table.get_item(Key=_key(team, artifact_id), ConsistentRead=True).get("Item")
        return artifact_from_item(item) if item else None

    def iter_team(
        self, team: str, *, task_id: str | None, workflow_id: str | None
    ) -> Iterator[Artifact]:
        kwargs: dict[str, Any] = {
            "KeyConditionExpression": Key("pk").eq(team_pk(team))
            & Key("sk").begins_with(ARTIFACT_PREFIX),
            "ConsistentRead": True,
        }
        conditions: list[ConditionBase] = []
        if task_id is not None:
            conditions.append(Attr("task_id").eq(task_id))
        if workflow_id is not None:
            conditions.append(Attr("workflow_id").eq(workflow_id))
        if conditions:
            combined = conditions[0]
            for condition in conditions[1:]:
                combined = combined & condition
            kwargs["FilterExpression"] = combined
        for item in query_all(self._table, **kwargs):
            yield artifact_from_item(item)


class S3ArtifactBlobs:
    """`ArtifactBlobs` in the artifacts bucket; `put` never overwrites (`If-None-Match: *`)."""

    def __init__(self, client: S3Client, bucket: str) -> None:
        self._client = client
        self._bucket = bucket

    def _key(self, team: str, artifact_id: str) -> str:
        return f"{BLOB_PREFIX}/{_part(team, 'team')}/{_part(artifact_id, 'artifact id')}"

    def location(self, team: str, artifact_id: str) -> str:
        """The `s3://` address `put` stores the artifact's bytes at."""
        return f"s3://{self._bucket}/{self._key(team, artifact_id)}"

    def put(self, team: str, artifact_id: str, body: bytes, mime_type: str) -> str:
        try:
            return put_new(
                self._client, self._bucket, self._key(team, artifact_id), body, mime_type
            )
        except ObjectExists as exc:
            raise BlobExists(artifact_id) from exc

    def get(self, team: str, artifact_id: str) -> bytes:
        try:
            response = self._client.get_object(
                Bucket=self._bucket, Key=self._key(team, artifact_id)
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] in {"NoSuchKey", "404"}:
                raise BlobMissing(artifact_id) from exc
            raise
        return response["Body"].read()


class FolderArtifactBlobs:
    """`ArtifactBlobs` in `<root>/<team>/<artifact_id>` on this machine (survives a restart)."""

    def __init__(self, root: Path) -> None:
        self._root = root

    def _path(self, team: str, artifact_id: str) -> Path:
        return self._root / _part(team, "team") / _part(artifact_id, "artifact id")

    def put(self, team: str, artifact_id: str, body: bytes, mime_type: str) -> str:
        path = self._path(team, artifact_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            # O_EXCL: never overwrite. A crash mid-write leaves a partial file, but no record
            # points at it: the service writes the record only after this returns.
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError as exc:
            raise BlobExists(artifact_id) from exc
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(body)
        return str(path)

    def get(self, team: str, artifact_id: str) -> bytes:
        try:
            return self._path(team, artifact_id).read_bytes()
        except FileNotFoundError as exc:
            raise BlobMissing(artifact_id) from exc
