"""The artifact service: store an artifact of a task, read it back, list a task's or workflow's.

An artifact is a record (metadata, size, SHA-256, where the bytes are) in the coordination table
and, unless it is only a `content_url` reference, bytes behind the `ArtifactBlobs` port. Bytes
are written once under a fresh id and never replaced; a new version is a new artifact.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from shared.auth.principal import Principal
from shared.orchestrator.artifacts.models import (
    BINARY_MIME,
    MAX_CONTENT_BYTES,
    TEXT_MIME,
    Artifact,
    ArtifactListInput,
    ArtifactWithContent,
)
from shared.orchestrator.artifacts.ports import (
    ArtifactBlobs,
    ArtifactRecords,
    BlobExists,
    BlobMissing,
    TaskLookup,
)
from shared.tools.errors import Conflict, InvalidArgument, NotFound

CONTENT_FIELDS = ("content", "content_base64", "content_url")
_JSON_MIMES = frozenset({"application/json", "application/ld+json"})


def new_artifact_id() -> str:
    return "art_" + secrets.token_hex(12)


def is_text(mime_type: str | None) -> bool:
    """Whether artifact.get returns bytes of this type as text (`content`) when they are UTF-8.

    >>> is_text("text/markdown; charset=utf-8"), is_text("application/vnd.api+json")
    (True, True)
    """
    if mime_type is None:
        return False
    base = mime_type.split(";", 1)[0].strip().lower()
    return base.startswith("text/") or base in _JSON_MIMES or base.endswith("+json")


@dataclass(eq=False)
class ArtifactService:
    records: ArtifactRecords
    blobs: ArtifactBlobs
    tasks: TaskLookup
    clock: Callable[[], float] = time.time
    max_bytes: int = MAX_CONTENT_BYTES

    def put(
        self,
        principal: Principal,
        *,
        task_id: str,
        name: str,
        artifact_type: str,
        content: str | None = None,
        content_base64: str | None = None,
        content_url: str | None = None,
        mime_type: str | None = None,
        metadata: dict[str, Any] | None = None,
        role: str | None = None,
    ) -> Artifact:
        """Store a new artifact of `task_id` (a task of the caller's team).

        Exactly one of `content` (text, stored as UTF-8), `content_base64` (bytes) and
        `content_url` (a reference, never fetched). Nothing is written when a check fails.
        """
        body, default_mime = self._body(content, content_base64, content_url)
        team = principal.team
        task = self.tasks.get(team, task_id)
        if task is None:
            raise NotFound(
                f"`task_id`: no task with id {task_id!r} in your team; use an id from "
                "task.create, task.poll or task.list",
                field="task_id",
            )
        artifact_id = new_artifact_id()
        mime = mime_type or default_mime
        storage = None
        if body is not None:
            # The bytes first, then the record: a failed record write leaves at worst bytes no
            # record points at (invisible, harmless), never a record whose bytes are missing.
            try:
                storage = self.blobs.put(team, artifact_id, body, mime or BINARY_MIME)
            except BlobExists as exc:  # a fresh random id: only a collision gets here
                raise Conflict(
                    f"`task_id`: artifact id {artifact_id} was taken by a concurrent write; "
                    "call artifact.put again",
                    field="task_id",
                ) from exc
        artifact = Artifact(
            artifact_id=artifact_id,
            task_id=task.id,
            workflow_id=task.workflow_id,
            name=name,
            artifact_type=artifact_type,
            mime_type=mime,
            metadata=metadata or {},
            role=role,
            size_bytes=None if body is None else len(body),
            sha256=None if body is None else hashlib.sha256(body).hexdigest(),
            storage=storage,
            content_url=content_url,
            created_by=principal.actor,
            created_at=datetime.fromtimestamp(self.clock(), tz=UTC),
        )
        self.records.create(team, artifact)
        return artifact

    def get(
        self, principal: Principal, artifact_id: str, *, include_content: bool = False
    ) -> ArtifactWithContent | None:
        """The artifact, with its bytes when `include_content`; None when the team has none."""
        artifact = self.records.get(principal.team, artifact_id)
        if artifact is None:
            return None
        found = ArtifactWithContent.model_validate(artifact.model_dump())
        if not include_content or artifact.storage is None:
            return found  # a content_url artifact has no bytes here: the URL is the content
        try:
            body = self.blobs.get(principal.team, artifact_id)
        except BlobMissing as exc:
            raise NotFound(
                f"`artifact_id`: the content of artifact {artifact_id!r} is missing from "
                "storage; call again without include_content for its record",
                field="artifact_id",
            ) from exc
        if is_text(artifact.mime_type):
            try:
                found.content = body.decode("utf-8")
                return found
            except UnicodeDecodeError:
                pass  # declared text, but not UTF-8: hand the bytes back as they are
        found.content_base64 = base64.b64encode(body).decode("ascii")
        return found

    def list_artifacts(self, principal: Principal, asked: ArtifactListInput) -> list[Artifact]:
        """The team's artifacts of a task and/or a workflow, newest first."""
        task_id, workflow_id = asked.task_id, asked.workflow_id
        if task_id is None and workflow_id is None:
            # Seed 000 never exposes an unfiltered enumeration ("list_all").
            raise InvalidArgument(
                "`task_id`: artifact.list does not list a whole team; give `task_id` or "
                "`workflow_id` (or both)",
                field="task_id",
            )
        found = list(
            self.records.iter_team(principal.team, task_id=task_id, workflow_id=workflow_id)
        )
        found.sort(key=lambda a: (a.created_at, a.artifact_id), reverse=True)
        return found

    def _body(
        self, content: str | None, content_base64: str | None, content_url: str | None
    ) -> tuple[bytes | None, str | None]:
        """The bytes to store (None for a URL) and the default mime type of that kind."""
        given = [
            name
            for name, value in zip(
                CONTENT_FIELDS, (content, content_base64, content_url), strict=True
            )
            if value is not None
        ]
        if len(given) != 1:
            got = "none" if not given else ", ".join(f"`{n}`" for n in given)
            raise InvalidArgument(
                "give exactly one of `content` (text), `content_base64` (bytes) or "
                f"`content_url` (a reference) (got {got})",
                field=given[1] if len(given) > 1 else "content",
            )
        if content_url is not None:
            return None, None
        if content is not None:
            body = content.encode("utf-8")
            self._check_size("content", len(body))
            return body, TEXT_MIME
        assert content_base64 is not None
        compact = "".join(content_base64.split())
        # 4 base64 characters hold 3 bytes (the last 4 at least 1): refuse a string too long for
        # the limit before decoding it.
        if len(compact) > (self.max_bytes + 2) // 3 * 4:
            self._check_size("content_base64", len(compact) // 4 * 3 - 2, at_least=True)
        try:
            body = base64.b64decode(compact, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise InvalidArgument(
                f"`content_base64` is not valid base64 ({exc}); encode the bytes with standard "
                "base64 (A-Z, a-z, 0-9, +, /, = padding)",
                field="content_base64",
            ) from exc
        self._check_size("content_base64", len(body))
        return body, BINARY_MIME

    def _check_size(self, field: str, size: int, *, at_least: bool = False) -> None:
        if size > self.max_bytes:
            raise InvalidArgument(
                f"`{field}` is {'at least ' if at_least else ''}{size} bytes, over the limit "
                f"of {self.max_bytes} bytes ({self.max_bytes / 1024 / 1024:g} MiB); store larger "
                "content elsewhere and pass its `content_url`",
                field=field,
            )
