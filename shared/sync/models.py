"""Sync and inbox (seed 000): tool inputs and outputs, connector state."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from shared.tools.inputs import SeedToolInput
from shared.tools.inputs import is_none as _is_none

MAX_INBOX_CHARS = 1_000_000
INBOX_EXTENSIONS = ("md", "txt", "json")


_ToolInput = SeedToolInput


class SyncInput(_ToolInput):
    source: str | None = Field(
        default=None,
        min_length=1,
        description="Only run this connector (default: every enabled connector).",
    )


class SyncStatusInput(_ToolInput):
    pass


class InboxPutInput(_ToolInput):
    content: str = Field(
        min_length=1, max_length=MAX_INBOX_CHARS, description="The text to file in the inbox."
    )
    title: str | None = Field(default=None, min_length=1, max_length=300, description="Title.")
    tags: list[str] = Field(default_factory=list, max_length=50, description="Tags.")
    metadata: dict[str, Any] = Field(default_factory=dict, description="Metadata object.")
    filename: str | None = Field(
        default=None,
        min_length=1,
        max_length=120,
        description="File name (without folders); default: derived from the title.",
    )
    extension: Literal["md", "txt", "json"] | None = Field(
        default=None, description="File extension: md (default), txt or json."
    )
    sync_immediately: bool = Field(
        default=False, description="Index the inbox right away instead of at the next sync."
    )


class SyncStats(BaseModel):
    entities_seen: int = 0
    chunks_written: int = 0
    entities_tombstoned: int = 0
    errors: int = 0
    started_at: datetime
    finished_at: datetime | None = None


class ConnectorResult(BaseModel):
    source: str
    success: bool
    message: str
    stats: SyncStats


class SyncOutput(BaseModel):
    """Seed 000: the connectors' results and the memories pruned — or, when another sync holds
    the team's lock, `{"skipped": true, "reason": "lock"}`."""

    connectors: list[ConnectorResult] | None = Field(default=None, exclude_if=_is_none)
    memory_pruned: int | None = Field(default=None, exclude_if=_is_none)
    skipped: bool | None = Field(default=None, exclude_if=_is_none)
    reason: Literal["lock"] | None = Field(default=None, exclude_if=_is_none)


class ConnectorStatus(BaseModel):
    source: str
    entities: int
    last_sync: datetime | None


class SyncStatusOutput(BaseModel):
    connectors: list[ConnectorStatus]


class InboxPutOutput(BaseModel):
    path: str
    # True when sync_immediately indexed it; false: it waits for the next sync.
    synced: bool = False


class InboxFile(BaseModel):
    """One file of a team's inbox."""

    name: str
    body: str
    path: str
