"""Sync and inbox (seed 000): tool inputs and outputs, connector state."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from shared.model_fields import optional_text
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
    run_id: str | None = optional_text(
        80,
        "Report this background run (default: the team's most recent runs).",
    )


class InboxPutInput(_ToolInput):
    content: str = Field(
        min_length=1, max_length=MAX_INBOX_CHARS, description="The text to file in the inbox."
    )
    title: str | None = optional_text(300, "Title.")
    tags: list[str] = Field(default_factory=list, max_length=50, description="Tags.")
    metadata: dict[str, Any] = Field(default_factory=dict, description="Metadata object.")
    filename: str | None = optional_text(
        120,
        "File name (without folders); default: derived from the title.",
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
    # cairn: a large team's sync runs in the background and is waited for; `connectors` and
    # `memory_pruned` are then the run's (so far, with `success: false`, when it outlasts the
    # wait) and `run` names the run `sync_status` reports on.
    run: SyncRunView | None = Field(default=None, exclude_if=_is_none)


class ConnectorStatus(BaseModel):
    source: str
    entities: int
    last_sync: datetime | None
    # cairn: a registered connector's kind, its last sync's counts and error (null once a
    # sync succeeds).
    kind: str | None = Field(default=None, exclude_if=_is_none)
    counts: dict[str, int] | None = Field(default=None, exclude_if=_is_none)
    last_error: str | None = Field(default=None, exclude_if=_is_none)


# `remove_connector`: a deployed stack's `cairn connectors remove` (the runner reaches the index).
RunKind = Literal["sync", "embeddings_build", "scheduled", "remove_connector"]
RunState = Literal["queued", "running", "succeeded", "failed", "skipped"]
OPEN_RUN_STATES: frozenset[str] = frozenset({"queued", "running"})


class SyncRun(BaseModel):
    """One background run of the sync runner (a large team's `sync` or `embeddings_build`, or
    a schedule firing): the record `sync_status` reports progress from. Counts only, never
    content."""

    run_id: str
    kind: RunKind
    source: str | None = None
    state: RunState = "queued"
    # What the run is doing now: connectors, documents, memories.
    phase: str | None = None
    done: int = 0
    total: int | None = None
    requested_by: str
    created_at: datetime
    started_at: datetime | None = None
    finished_at: datetime | None = None
    # Written with every progress step: a running run whose heartbeat is older than the
    # runner's longest life has died (timeout, crash) and is reported failed.
    heartbeat_at: datetime | None = None
    error: str | None = None
    counts: dict[str, int] = Field(default_factory=dict)
    # The run took the team's sync lock when it was queued and releases it when it ends.
    holds_lock: bool = False


class SyncRunView(BaseModel):
    """A run as the sync tools report it."""

    run_id: str
    kind: RunKind
    source: str | None = Field(default=None, exclude_if=_is_none)
    state: RunState
    phase: str | None = Field(default=None, exclude_if=_is_none)
    done: int
    total: int | None = Field(default=None, exclude_if=_is_none)
    created_at: datetime
    started_at: datetime | None = Field(default=None, exclude_if=_is_none)
    finished_at: datetime | None = Field(default=None, exclude_if=_is_none)
    error: str | None = Field(default=None, exclude_if=_is_none)
    counts: dict[str, int] = Field(default_factory=dict)


class SyncStatusOutput(BaseModel):
    connectors: list[ConnectorStatus]
    # cairn: the team's background runs, newest first (or the one `run_id` names).
    runs: list[SyncRunView] = Field(default_factory=list)


class InboxPutOutput(BaseModel):
    path: str
    # True when sync_immediately indexed it; false: it waits for the next sync.
    synced: bool = False


class EmbeddingsBuildInput(_ToolInput):
    source: str | None = Field(
        default=None,
        min_length=1,
        description="Only rebuild documents of this source (default: every source and the "
        "team's memories).",
    )


class EmbeddingsBuildOutput(BaseModel):
    total: int = Field(
        description="Chunks indexed for the team (or the given source), memories included; "
        "while a background build is still running (see `run`), what it has indexed so far."
    )
    run: SyncRunView | None = Field(default=None, exclude_if=_is_none)


_SCHEDULE_SOURCE = "One connector's schedule (default: the team's)."


class ScheduleSetInput(_ToolInput):
    source: str | None = optional_text(64, _SCHEDULE_SOURCE)
    every: str | None = optional_text(
        20,
        "Sync every so often: a number and a unit, e.g. 15m, 2h, 1d (at least 5m).",
    )
    cron: str | None = optional_text(
        100, "Or Scheduler's six cron fields in UTC, e.g. '0 6 * * ? *'."
    )


class ScheduleGetInput(_ToolInput):
    source: str | None = optional_text(64, _SCHEDULE_SOURCE)


class SyncScheduleView(BaseModel):
    """A team's sync schedule, or one of its connectors' (`source`)."""

    team: str
    schedule: str
    expression: str
    source: str | None = Field(default=None, exclude_if=_is_none)
    state: str | None = Field(default=None, exclude_if=_is_none)
    last_fired_at: datetime | None = Field(default=None, exclude_if=_is_none)


class ScheduleOutput(BaseModel):
    schedule: SyncScheduleView | None
    # sync_schedule_get without `source`: the team's connector schedules beside its own.
    connectors: list[SyncScheduleView] | None = Field(default=None, exclude_if=_is_none)


class ScheduleDeleteOutput(BaseModel):
    deleted: bool


class InboxFile(BaseModel):
    """One file of a team's inbox."""

    name: str
    body: str
    path: str
