"""The inbox: S3 (`inbox/<team>/<name>` in the artifacts bucket) or a local folder."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from shared.config import names
from shared.storage.s3 import ObjectExists, put_new
from shared.sync.models import InboxFile
from shared.sync.ports import FileExists

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

PREFIX = names.BUCKET_PREFIX_INBOX


def _team_part(team: str) -> str:
    # Team names are validated at token creation; this keeps a path from ever leaving its folder.
    if not team or "/" in team or team in {".", ".."}:
        raise ValueError(f"unusable team name for the inbox: {team!r}")
    return team


class S3Inbox:
    """`Inbox` in an S3 bucket; `put` never overwrites (`If-None-Match: *`)."""

    def __init__(self, client: S3Client, bucket: str) -> None:
        self._client = client
        self._bucket = bucket

    def _key(self, team: str, name: str) -> str:
        return f"{PREFIX}/{_team_part(team)}/{name}"

    def put(self, team: str, name: str, body: str) -> str:
        try:
            return put_new(
                self._client,
                self._bucket,
                self._key(team, name),
                body.encode(),
                "text/plain; charset=utf-8",
            )
        except ObjectExists as exc:
            raise FileExists(name) from exc

    def names(self, team: str) -> Iterator[str]:
        prefix = f"{PREFIX}/{_team_part(team)}/"
        paginator = self._client.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=self._bucket, Prefix=prefix):
            for entry in page.get("Contents", []):
                yield entry["Key"].removeprefix(prefix)

    def files(self, team: str) -> Iterator[InboxFile]:
        prefix = f"{PREFIX}/{_team_part(team)}/"
        paginator = self._client.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=self._bucket, Prefix=prefix):
            for entry in page.get("Contents", []):
                key = entry["Key"]
                body: Any = self._client.get_object(Bucket=self._bucket, Key=key)["Body"]
                yield InboxFile(
                    name=key.removeprefix(prefix),
                    body=body.read().decode("utf-8", errors="replace"),
                    path=f"s3://{self._bucket}/{key}",
                )


class FolderInbox:
    """`Inbox` in `<root>/<team>/` on this machine (local mode: survives a restart)."""

    def __init__(self, root: Path) -> None:
        self._root = root

    def put(self, team: str, name: str, body: str) -> str:
        folder = self._root / _team_part(team)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / name
        try:
            # O_EXCL: never overwrite a file another call just wrote.
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError as exc:
            raise FileExists(name) from exc
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(body)
        return str(path)

    def names(self, team: str) -> Iterator[str]:
        folder = self._root / _team_part(team)
        if folder.is_dir():
            yield from sorted(p.name for p in folder.iterdir() if p.is_file())

    def files(self, team: str) -> Iterator[InboxFile]:
        folder = self._root / _team_part(team)
        if not folder.is_dir():
            return
        for path in sorted(p for p in folder.iterdir() if p.is_file()):
            yield InboxFile(
                name=path.name,
                body=path.read_text(encoding="utf-8", errors="replace"),
                path=str(path),
            )
