"""The S3 toolkit: what more than one S3 adapter does, written once."""

from __future__ import annotations

from typing import TYPE_CHECKING

from botocore.exceptions import ClientError

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

# What S3 answers a conditional put that lost: an object is there, or another put is racing.
_OBJECT_EXISTS = {"PreconditionFailed", "ConditionalRequestConflict"}


class ObjectExists(Exception):
    """`put_new` found an object under its key (or lost the race to create one)."""


def put_new(client: S3Client, bucket: str, key: str, body: bytes, content_type: str) -> str:
    """`PutObject` only where no object is (`If-None-Match: *`): its `s3://` URI, or
    `ObjectExists` rather than an overwrite."""
    try:
        client.put_object(
            Bucket=bucket, Key=key, Body=body, ContentType=content_type, IfNoneMatch="*"
        )
    except ClientError as exc:
        if exc.response["Error"]["Code"] in _OBJECT_EXISTS:
            raise ObjectExists(key) from exc
        raise
    return f"s3://{bucket}/{key}"


def delete_prefix(client: S3Client, bucket: str, prefix: str) -> int:
    """Delete every object under `prefix`, every version of it (a versioned bucket keeps old
    versions after a plain delete: an erasure must not); how many objects it held."""
    objects: set[str] = set()
    paginator = client.get_paginator("list_object_versions")
    for page in paginator.paginate(Bucket=bucket, Prefix=prefix):
        versions = [*page.get("Versions", []), *page.get("DeleteMarkers", [])]
        objects.update(v["Key"] for v in page.get("Versions", []) if v.get("IsLatest"))
        for start in range(0, len(versions), 1000):
            batch = versions[start : start + 1000]
            client.delete_objects(
                Bucket=bucket,
                Delete={
                    "Objects": [{"Key": v["Key"], "VersionId": v["VersionId"]} for v in batch],
                    "Quiet": True,
                },
            )
    return len(objects)
