"""Seed 000's advanced memory tools: inputs and outputs (memory_write, memory_query,
memory_retract, memory_supersede, memory_propose, memory_review, conflicts_list,
conflict_resolve, duplicates_list, duplicate_resolve). Seed 000 gives one line per tool; the
shapes are cairn's, documented in docs/memory.md."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from shared.memory.models import (
    MAX_CONTENT_CHARS,
    MAX_TAGS,
    CurationStatus,
    Finding,
    Memory,
    MemoryKind,
    MemorySource,
)
from shared.model_fields import optional_text
from shared.tools.inputs import SeedToolInput

MAX_SOURCES = 50
MAX_REVIEW_IDS = 50
QueryStatus = Literal[
    "active", "filed", "pending", "proposed", "rejected", "superseded", "retracted"
]


class _Claim(SeedToolInput):
    """What a structured memory says (memory_write and memory_propose)."""

    content: str = Field(
        min_length=1, max_length=MAX_CONTENT_CHARS, description="The claim, standing alone."
    )
    subject: str | None = optional_text(
        300,
        "What the memory is about (e.g. `deploy window`); conflicts are found "
        "among active memories about the same subject.",
    )
    kind: MemoryKind = Field(
        default="fact", description="fact, decision, preference, procedure or observation"
    )
    title: str | None = optional_text(300, "Headline.")
    tags: list[str] = Field(default_factory=list, max_length=MAX_TAGS, description="Tags.")
    sources: list[MemorySource] = Field(
        default_factory=list,
        max_length=MAX_SOURCES,
        description="Provenance: `{type: tool|url|document|task|memory|agent|other, ref}`.",
    )
    confidence: float | None = Field(
        default=None, ge=0.0, le=1.0, description="How sure the author is, 0 to 1."
    )
    valid_from: datetime | None = Field(
        default=None,
        description="Valid time: when the claim became true (default: when it is recorded).",
    )
    valid_to: datetime | None = Field(
        default=None, description="Valid time: when it stops being true (default: open)."
    )
    metadata: dict[str, Any] = Field(default_factory=dict, description="Free-form metadata.")


class MemoryWriteInput(_Claim):
    pass


class MemoryProposeInput(_Claim):
    pass


class MemoryRecordOutput(BaseModel):
    """The record as stored (its `status`, links and history included)."""

    memory: Memory


class MemoryQueryInput(SeedToolInput):
    query: str | None = optional_text(
        4096,
        "Optional free text, ranked by the hybrid engine (BM25 + vectors).",
    )
    subject: str | None = Field(default=None, min_length=1, max_length=300)
    kind: MemoryKind | None = None
    tags: list[str] = Field(
        default_factory=list, max_length=MAX_TAGS, description="Memories with any of these tags."
    )
    created_by: str | None = optional_text(200, "The author (agent or token:…).")
    status: list[QueryStatus] = Field(
        default_factory=list,
        max_length=7,
        description="Lifecycle states to include (default `active` = filed or pending). "
        "Rejected records are shown to their author and to `memory.review` tokens only.",
    )
    as_of: datetime | None = Field(
        default=None,
        description="Valid time: only memories whose validity covers this instant (a "
        "superseded version counts for the window it was valid in).",
    )
    known_at: datetime | None = Field(
        default=None,
        description="Transaction time: the memories as the team knew them then (writes, "
        "supersessions, retractions and reviews after it are undone).",
    )
    versions_of: str | None = optional_text(
        64,
        "A memory id: return its whole version chain, oldest first (other "
        "filters still apply, except `status`).",
    )
    flagged: bool | None = Field(
        default=None,
        description="true: only memories someone flagged as wrong (flag_memory); false: only "
        "unflagged ones; absent: both.",
    )
    limit: int = Field(default=20, ge=1, le=100)
    cursor: str | None = Field(default=None, min_length=1, max_length=2048)


class MemoryQueryOutput(BaseModel):
    memories: list[Memory]
    next_cursor: str | None


class MemoryRetractInput(SeedToolInput):
    id: str = Field(min_length=1, max_length=64, description="The memory to retract.")
    reason: str = Field(min_length=1, max_length=2_000, description="Why it is wrong.")


class MemorySupersedeInput(SeedToolInput):
    id: str = Field(min_length=1, max_length=64, description="The active version to replace.")
    content: str = Field(min_length=1, max_length=MAX_CONTENT_CHARS, description="New claim.")
    subject: str | None = Field(default=None, min_length=1, max_length=300)
    kind: MemoryKind | None = None
    title: str | None = Field(default=None, min_length=1, max_length=300)
    tags: list[str] | None = Field(default=None, max_length=MAX_TAGS)
    sources: list[MemorySource] | None = Field(default=None, max_length=MAX_SOURCES)
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    valid_from: datetime | None = Field(
        default=None,
        description="When the new version becomes true (default now); the old version's "
        "validity ends here.",
    )
    valid_to: datetime | None = None
    reason: str | None = Field(default=None, min_length=1, max_length=2_000)


class MemorySupersedeOutput(BaseModel):
    memory: Memory
    superseded: Memory


class MemoryReviewInput(SeedToolInput):
    ids: list[str] = Field(
        min_length=1, max_length=MAX_REVIEW_IDS, description="Proposal ids to decide."
    )
    decision: Literal["approve", "reject"]
    note: str | None = Field(default=None, min_length=1, max_length=2_000)


class ReviewOutcome(BaseModel):
    id: str
    decided: bool = Field(description="False when the proposal was not (or no longer) open.")
    status: CurationStatus | None = Field(description="The status now (None: no such memory).")
    message: str | None = None


class MemoryReviewOutput(BaseModel):
    results: list[ReviewOutcome]


class FindingsListInput(SeedToolInput):
    status: Literal["open", "resolved", "dismissed", "all"] = "open"
    limit: int = Field(default=20, ge=1, le=100)
    cursor: str | None = Field(default=None, min_length=1, max_length=2048)


class FindingView(BaseModel):
    """A finding with its member memories as they are now."""

    finding: Finding
    memories: list[Memory]


class FindingsListOutput(BaseModel):
    items: list[FindingView]
    next_cursor: str | None


class ConflictResolveInput(SeedToolInput):
    id: str = Field(min_length=1, max_length=64, description="The conflict id.")
    action: Literal["keep", "merge", "both_valid"]
    keep_id: str | None = optional_text(64, "`keep`: the memory that wins.")
    content: str | None = optional_text(
        MAX_CONTENT_CHARS, "`merge`: the merged claim, written as a new version of both."
    )
    note: str | None = Field(default=None, min_length=1, max_length=2_000)


class DuplicateResolveInput(SeedToolInput):
    id: str = Field(min_length=1, max_length=64, description="The duplicate cluster id.")
    action: Literal["merge", "dismiss"]
    keep_id: str | None = optional_text(
        64,
        "`merge`: the member that survives (default the oldest).",
    )
    note: str | None = Field(default=None, min_length=1, max_length=2_000)


class FindingResolveOutput(BaseModel):
    finding: Finding
    memories: list[Memory]
