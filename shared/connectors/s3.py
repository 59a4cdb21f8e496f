"""The `s3` kind: the objects under a bucket's prefix, read with the sync runner's role (the
stack grants it `s3:ListBucket` and `s3:GetObject` on the configured bucket only). An object's
version is its ETag, so an unchanged object is not downloaded again."""

from __future__ import annotations

from typing import Any

from shared.connectors.documents import matches, skipped_path
from shared.connectors.models import ConnectorError, Fetched, Listing, S3Settings, SourceItem


class S3Source:
    """`Source` over `s3://bucket/prefix`."""

    def __init__(self, settings: S3Settings, client: Any) -> None:
        self._settings = settings
        self._client = client

    def _fail(self, what: str, exc: Exception) -> ConnectorError:
        code = getattr(exc, "response", {}).get("Error", {}).get("Code") or type(exc).__name__
        where = f"s3://{self._settings.bucket}/{self._settings.prefix}"
        return ConnectorError(f"cannot {what} {where}: {code}")

    def list(self, cursor: str | None) -> Listing | None:
        prefix = self._settings.prefix
        items: list[SourceItem] = []
        hidden = 0
        try:
            pages = self._client.get_paginator("list_objects_v2").paginate(
                Bucket=self._settings.bucket, Prefix=prefix
            )
            for page in pages:
                for entry in page.get("Contents", []):
                    key = str(entry["Key"])
                    path = key.removeprefix(prefix).lstrip("/")
                    if not path or key.endswith("/"):
                        continue  # a folder marker
                    if skipped_path(path):
                        hidden += 1
                        continue
                    if not matches(path, self._settings.globs):
                        continue
                    items.append(
                        SourceItem(
                            id=path,
                            version=str(entry.get("ETag", "")).strip('"') or None,
                            size=int(entry.get("Size", 0)),
                            uri=f"s3://{self._settings.bucket}/{key}",
                        )
                    )
        except Exception as exc:
            raise self._fail("list", exc) from None
        return Listing(items=items, skipped={"hidden": hidden})

    def read(self, item: SourceItem, known: str | None) -> Fetched:
        assert item.uri is not None  # listed with its s3:// URI
        key = item.uri.removeprefix(f"s3://{self._settings.bucket}/")
        try:
            body = self._client.get_object(Bucket=self._settings.bucket, Key=key)["Body"]
            data = body.read(self._settings.max_file_bytes + 1)
        except Exception as exc:
            raise self._fail("read", exc) from None
        return Fetched(data=bytes(data), version=item.version)

    def close(self) -> None:
        return None
