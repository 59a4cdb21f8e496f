"""Artifacts (seed 000, "Artifact Tools"): tool inputs and outputs, and the stored record.

Seed 000 gives the input schemas and only the shape of the responses; cairn's choices where it is
silent are documented in docs/orchestrator.md ("Artifacts").
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from shared.model_fields import checked_metadata, optional_text

# The most bytes one artifact may hold (after base64 decoding). Larger files belong elsewhere,
# referenced by `content_url`.
MAX_CONTENT_BYTES = 5 * 1024 * 1024
MAX_NAME_CHARS = 300
MAX_FIELD_CHARS = 100
MAX_URL_CHARS = 2_048
MAX_ID_CHARS = 64
# The default mime type of each kind of content when the caller names none.
TEXT_MIME = "text/plain; charset=utf-8"
BINARY_MIME = "application/octet-stream"

_MIME = re.compile(r"^[A-Za-z0-9][\w.+-]*/[\w.+-]+(\s*;\s*[\w.+-]+=\S+)*$")
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:\S+$")


class _Input(BaseModel):
    # Anything the seed does not list is refused, so a typo never passes silently.
    model_config = ConfigDict(extra="forbid")


class ArtifactPutInput(_Input):
    task_id: str = Field(
        min_length=1,
        max_length=MAX_ID_CHARS,
        description="The task (tsk_…) of the caller's team the artifact belongs to; the "
        "artifact takes the task's workflow_id.",
    )
    name: str = Field(min_length=1, max_length=MAX_NAME_CHARS, description="Artifact name.")
    artifact_type: str = Field(
        min_length=1,
        max_length=MAX_FIELD_CHARS,
        description="What kind of artifact this is (for example report, code, diff, log).",
    )
    content: str | None = Field(
        default=None,
        description="Text content (stored as UTF-8). Give exactly one of content, "
        "content_base64 and content_url; at most 5 MiB.",
    )
    content_base64: str | None = Field(
        default=None,
        description="Binary content, standard base64 (whitespace ignored); at most 5 MiB "
        "once decoded.",
    )
    content_url: str | None = Field(
        default=None,
        max_length=MAX_URL_CHARS,
        description="Where the content lives already (https://…, s3://…). Stored as a "
        "reference only: cairn never fetches it.",
    )
    mime_type: str | None = Field(
        default=None,
        max_length=MAX_FIELD_CHARS,
        description=f"The content's media type. Default: {TEXT_MIME} for content, "
        f"{BINARY_MIME} for content_base64, none for content_url.",
    )
    metadata: dict[str, Any] = Field(
        default_factory=dict,
        description="Free-form JSON object stored with the artifact (at most 8 KB as JSON).",
    )
    role: str | None = optional_text(
        MAX_FIELD_CHARS,
        "The artifact's part in the task, free text (for example input, output).",
    )

    @field_validator("content_url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is not None and not _URL.match(value):
            raise ValueError("must be an absolute URL such as https://host/path or s3://b/key")
        return value

    @field_validator("mime_type")
    @classmethod
    def _mime(cls, value: str | None) -> str | None:
        if value is not None and not _MIME.match(value):
            raise ValueError("must be a media type such as text/markdown or image/png")
        return value

    @field_validator("metadata")
    @classmethod
    def _metadata(cls, value: dict[str, Any]) -> dict[str, Any]:
        return checked_metadata(value)


class ArtifactGetInput(_Input):
    artifact_id: str = Field(
        min_length=1, max_length=MAX_ID_CHARS, description="The artifact's id (art_…)."
    )
    include_content: bool = Field(
        default=False,
        description="Also return the stored bytes: `content` (text) for text/* and JSON "
        "artifacts that are valid UTF-8, else `content_base64`.",
    )


class ArtifactListInput(_Input):
    task_id: str | None = optional_text(MAX_ID_CHARS, "The task's artifacts.")
    workflow_id: str | None = optional_text(
        MAX_ID_CHARS,
        "The workflow's artifacts (those of its tasks). Give task_id, workflow_id or both.",
    )


class Artifact(BaseModel):
    """An artifact record: the metadata and where its bytes are, never the bytes."""

    artifact_id: str
    task_id: str
    workflow_id: str | None = None
    name: str
    artifact_type: str
    mime_type: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    role: str | None = None
    size_bytes: int | None = Field(default=None, description="Stored bytes; none for a URL.")
    sha256: str | None = Field(default=None, description="Hex SHA-256 of the stored bytes.")
    storage: str | None = Field(
        default=None, description="Where cairn keeps the bytes (s3://… or a local path)."
    )
    content_url: str | None = Field(default=None, description="The reference, when given.")
    created_by: str
    created_at: datetime


def _absent(value: object) -> bool:
    return value is None


class ArtifactWithContent(Artifact):
    """artifact.get's answer: the record and, with include_content, the bytes (one field)."""

    content: str | None = Field(default=None, exclude_if=_absent)
    content_base64: str | None = Field(default=None, exclude_if=_absent)


class ArtifactOutput(BaseModel):
    artifact: Artifact


class ArtifactGetOutput(BaseModel):
    artifact: ArtifactWithContent | None


class ArtifactListOutput(BaseModel):
    artifacts: list[Artifact]
