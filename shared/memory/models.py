"""Memory: tool inputs and outputs (seed 000 shapes) and the domain record."""

from __future__ import annotations

import secrets
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from shared.model_fields import optional_text
from shared.storage.values import utf8_at_most
from shared.tools.inputs import SeedToolInput
from shared.tools.inputs import is_empty as _is_empty
from shared.tools.inputs import is_none as _is_none

MAX_CONTENT_CHARS = 100_000
MAX_TAGS = 50
MAX_FLAGS = 50
# Keys become part of a DynamoDB sort key (at most 1,024 bytes with its prefix).
KeyText = Annotated[str, utf8_at_most(512)]
WalletText = Annotated[str, utf8_at_most(128)]


_ToolInput = SeedToolInput


class MemoryPutInput(_ToolInput):
    key: KeyText = Field(min_length=1, max_length=512, description="Memory key.")
    content: str = Field(min_length=1, max_length=MAX_CONTENT_CHARS, description="Memory content.")
    tags: list[str] = Field(default_factory=list, max_length=MAX_TAGS, description="Optional tags.")
    metadata: dict[str, Any] = Field(default_factory=dict, description="Optional metadata object.")
    ttl_days: int | None = Field(
        default=None, ge=1, le=36_500, description="Optional time-to-live in days."
    )
    expires_at: datetime | None = Field(
        default=None, description="Optional ISO timestamp when the memory expires."
    )


class MemoryGetInput(_ToolInput):
    id: str | None = optional_text(64, "Memory id.")
    key: KeyText | None = optional_text(512, "Memory key.")


class MemorySearchInput(_ToolInput):
    query: str = Field(min_length=1, max_length=4096, description="Search query string.")
    limit: int = Field(default=20, ge=1, le=100, description="Maximum number of entries to return.")


class MemoryFlag(BaseModel):
    """Seed 002's flag_memory: who said a memory is wrong, why, and when."""

    agent_id: str
    reason: str
    flagged_at: datetime

    def repeats(self, other: MemoryFlag) -> bool:
        """Whether this is `other` said again: the same caller, the same reason (case and
        spacing aside). A repeated flag counts once."""
        return self.agent_id == other.agent_id and _said(self.reason) == _said(other.reason)


def _said(reason: str) -> str:
    return " ".join(reason.split()).casefold()


def distinct_flags(flags: list[MemoryFlag]) -> list[MemoryFlag]:
    """Each flag once: a repeat of an earlier one (`MemoryFlag.repeats`) is left out."""
    kept: list[MemoryFlag] = []
    for flag in flags:
        if not any(flag.repeats(earlier) for earlier in kept):
            kept.append(flag)
    return kept


# A memory's lifecycle (docs/memory.md draws it): `pending` (remember, until the curator files
# it) and `filed` are active; `proposed` awaits review and is `filed` on approval or `rejected`;
# an active memory ends `superseded` (a newer version replaced it) or `retracted` (it was wrong).
CurationStatus = Literal["filed", "pending", "proposed", "rejected", "superseded", "retracted"]
ACTIVE_STATUSES: frozenset[str] = frozenset({"filed", "pending"})
# The scope that reviews proposals and reads every author's memories (memory_review).
REVIEW_SCOPE = "memory.review"
MemoryKind = Literal["fact", "decision", "preference", "procedure", "observation"]
SourceType = Literal["tool", "url", "document", "task", "memory", "agent", "other"]
EventAction = Literal[
    "written", "proposed", "approved", "rejected", "superseded", "retracted", "merged"
]
EngramType = Literal["persona", "preference", "strategy", "knowledge", "compliance"]


def _is_filed(value: object) -> bool:
    return value == "filed"


class MemorySource(BaseModel):
    """Provenance of a memory: where its claim came from (a tool, a URL, a document, a task,
    another memory)."""

    model_config = ConfigDict(extra="forbid")

    type: SourceType = Field(description="tool, url, document, task, memory, agent or other")
    ref: str = Field(
        min_length=1,
        max_length=2_048,
        description="The tool name, URL, document/entity id, task id or memory id.",
    )


class MemoryEvent(BaseModel):
    """One transition in a memory's history (transaction time): what happened, when, who did
    it, and the record's `status` and `valid_to` right after it, so `known_at` can replay it."""

    at: datetime
    action: EventAction
    by: str
    status: CurationStatus
    valid_to: datetime | None = None
    note: str | None = Field(default=None, exclude_if=_is_none)
    related: str | None = Field(default=None, exclude_if=_is_none)


class Memory(BaseModel):
    """One memory record, whichever surface wrote it.

    Seed 000's `memory_put` fills `key`; seed 002's `remember` fills `title` (and `applies_to`,
    `confidence`) and leaves the record `pending` until the curator files it. Every surface
    reads the same record.
    """

    id: str
    key: str | None = None
    # Fields only some surfaces fill are left out of the JSON while unset, so a memory_put
    # record keeps seed 000's shape exactly.
    title: str | None = Field(default=None, exclude_if=_is_none)
    content: str
    tags: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    applies_to: list[str] = Field(default_factory=list, exclude_if=_is_empty)
    # Seed 002's remember writes a text note ("high"); memory_write a number in [0, 1].
    confidence: str | float | None = Field(default=None, exclude_if=_is_none)
    # Structured memory (seed 000's memory_write): what it is about, what kind of claim, where
    # it came from, and its valid time (valid_from None = since it was recorded).
    subject: str | None = Field(default=None, exclude_if=_is_none)
    kind: MemoryKind | None = Field(default=None, exclude_if=_is_none)
    sources: list[MemorySource] = Field(default_factory=list, exclude_if=_is_empty)
    valid_from: datetime | None = Field(default=None, exclude_if=_is_none)
    valid_to: datetime | None = Field(default=None, exclude_if=_is_none)
    created_at: datetime
    updated_at: datetime
    expires_at: datetime | None = None
    created_by: str
    status: CurationStatus = Field(default="filed", exclude_if=_is_filed)
    # Each flag once, also as read back from a store that holds a repeat (a race, older data).
    flags: Annotated[list[MemoryFlag], AfterValidator(distinct_flags)] = Field(
        default_factory=list, exclude_if=_is_empty
    )
    links: list[str] = Field(default_factory=list, exclude_if=_is_empty)
    merged_from: list[str] = Field(default_factory=list, exclude_if=_is_empty)
    # The version chain, linked both ways (memory_supersede), and the lifecycle history.
    supersedes: str | None = Field(default=None, exclude_if=_is_none)
    superseded_by: str | None = Field(default=None, exclude_if=_is_none)
    history: list[MemoryEvent] = Field(default_factory=list, exclude_if=_is_empty)
    # Seed 004's engrams: a wallet-owned, typed record whose `key` is unique per wallet.
    wallet_address: str | None = Field(default=None, exclude_if=_is_none)
    engram_type: EngramType | None = Field(default=None, exclude_if=_is_none)
    is_public: bool | None = Field(default=None, exclude_if=_is_none)
    # Seed 004's pin (hecate_pin_engram / moros_pin_engram): engram_delete refuses a pinned
    # engram and session cleanup never removes it. Left out of the JSON while unpinned.
    pinned: bool = Field(default=False, exclude_if=lambda value: not value)

    def is_expired(self, now: datetime) -> bool:
        return self.expires_at is not None and self.expires_at <= now

    @property
    def heading(self) -> str | None:
        """What the memory is called: its title, else its key."""
        return self.title or self.key

    @property
    def flagged(self) -> bool:
        return bool(self.flags)

    @property
    def active(self) -> bool:
        """Visible to recall, search and memory_get by key: not proposed, rejected,
        superseded or retracted."""
        return self.status in ACTIVE_STATUSES

    @property
    def valid_since(self) -> datetime:
        return self.valid_from or self.created_at


def new_memory_id() -> str:
    return "mem_" + secrets.token_hex(12)


def new_memory(created_by: str, now: datetime, *, tags: list[str], **fields: Any) -> Memory:
    """A new memory record written by `created_by` at `now`: a fresh id, tags without repeats
    (the first of each kept), and `fields`."""
    return Memory(
        id=new_memory_id(),
        tags=list(dict.fromkeys(tags)),
        created_at=now,
        updated_at=now,
        created_by=created_by,
        **fields,
    )


FindingKind = Literal["conflict", "duplicate"]
FindingStatus = Literal["open", "resolved", "dismissed"]


class FindingResolution(BaseModel):
    """How a finding was settled, by whom and when; `result_id` is the memory kept or the
    version written by a merge."""

    action: Literal["keep", "merge", "both_valid", "dismiss"]
    by: str
    at: datetime
    note: str | None = None
    result_id: str | None = None


class Finding(BaseModel):
    """What the curator found among a team's active memories: a `conflict` (two memories on
    one subject whose claims differ) or a `duplicate` cluster (near-identical memories)."""

    id: str
    kind: FindingKind
    members: list[str]
    status: FindingStatus = "open"
    detected_at: datetime
    topic: str | None = None
    similarity: float | None = None
    signals: list[str] = Field(default_factory=list)
    resolution: FindingResolution | None = None


class MemoryOutput(BaseModel):
    """`memory_put` / `memory_get`: `{"memory": null}` when absent."""

    memory: Memory | None


class MemorySearchHit(BaseModel):
    id: str
    key: str | None
    content: str
    tags: list[str]
    score: float


class MemorySearchOutput(BaseModel):
    results: list[MemorySearchHit]


# --------------------------------------------------------------------------- seed 002 verbs


class _VerbInput(BaseModel):
    # Seed 002: `agent_id` is server-populated from the token, so an argument naming the agent is
    # refused like any unknown one; nothing about identity is taken from arguments.
    model_config = ConfigDict(extra="forbid")


class RememberInput(_VerbInput):
    title: str = Field(
        min_length=1,
        max_length=300,
        description="Short, self-describing headline for the memory — what you’d scan for to "
        "find it later.",
    )
    body: str = Field(
        min_length=1,
        max_length=MAX_CONTENT_CHARS,
        description="The full fact, preference, or decision, written to stand alone — it must "
        "make sense with none of the surrounding conversation for context.",
    )
    applies_to: list[str] = Field(
        default_factory=list,
        max_length=MAX_TAGS,
        description="Optional scope hints — the projects, paths, or contexts this memory is "
        "relevant to.",
    )
    confidence: str | None = optional_text(
        100,
        "Optional confidence note (e.g. ‘high’, ‘tentative’), passed to the curator "
        "when it files the memory.",
    )
    tags: list[str] = Field(
        default_factory=list,
        max_length=MAX_TAGS,
        description="Tags to file the memory under, so it surfaces in the right context later.",
    )
    # Seed 002: "Caller-supplied is_global / requires_approval are ignored."
    is_global: bool | None = Field(default=None, description="Ignored.")
    requires_approval: bool | None = Field(default=None, description="Ignored.")


class RememberOutput(BaseModel):
    """Fire-and-forget: the memory is accepted; the curator files it (dedupe, merge, link)."""

    status: Literal["accepted"] = "accepted"
    memory_id: str


class RecallInput(_VerbInput):
    query: str | None = optional_text(
        4096, "Free-text search over the owner’s durable memories; matches are ranked by relevance."
    )
    tags: list[str] = Field(
        default_factory=list,
        max_length=MAX_TAGS,
        description="Narrow the search to memories carrying any of these tags.",
    )
    include_ids: bool = Field(
        default=False,
        description="When true, prefix each result with its memory id, so a memory that turns "
        "out to be wrong can be passed straight to flag_memory.",
    )
    limit: int = Field(
        default=10, ge=1, le=100, description="Maximum number of memories to return."
    )


class RecalledMemory(BaseModel):
    id: str | None = Field(default=None, exclude_if=_is_none)
    title: str | None
    body: str
    tags: list[str]
    applies_to: list[str]
    confidence: str | float | None
    flagged: bool
    updated_at: datetime


class RecallOutput(BaseModel):
    """Best first; flagged memories after every unflagged match. `text` is the same list as
    lines an agent can read directly (each prefixed with `[id]` when `include_ids`)."""

    memories: list[RecalledMemory]
    text: str


class FlagMemoryInput(_VerbInput):
    memory_id: str = Field(
        min_length=1,
        max_length=64,
        description="The id of the memory to flag — take it from a recall result fetched with "
        "include_ids: true.",
    )
    reason: str = Field(
        min_length=1,
        max_length=2_000,
        description="Why the memory is wrong, misleading, or outdated (required). Free text, "
        "recorded for the human reviewer.",
    )


class FlagMemoryOutput(BaseModel):
    memory_id: str
    flagged: Literal[True] = True
    flag_count: int


# --------------------------------------------------------------------------- seed 004 engrams


_WALLET_PATTERN = r"^[^#]+$"  # `#` separates wallet and key in the engram's alias key


class EngramCreateInput(_VerbInput):
    wallet_address: WalletText = Field(
        min_length=1,
        max_length=128,
        pattern=_WALLET_PATTERN,
        description="Wallet address that owns this engram",
    )
    engram_type: EngramType = Field(
        description="persona, preference, strategy, knowledge or compliance"
    )
    key: KeyText = Field(
        min_length=1, max_length=512, description="Unique key (e.g., `user.profile.base`)"
    )
    content: str = Field(
        min_length=1, max_length=MAX_CONTENT_CHARS, description="JSON string content"
    )
    tags: list[str] = Field(
        default_factory=list, max_length=MAX_TAGS, description="Tags for categorization"
    )
    is_public: bool = Field(default=False, description="Whether publicly visible")


class EngramGetInput(_VerbInput):
    wallet_address: WalletText = Field(
        min_length=1,
        max_length=128,
        pattern=_WALLET_PATTERN,
        description="Wallet address that owns the engram",
    )
    key: KeyText = Field(min_length=1, max_length=512, description="Engram key to look up")


class EngramSearchInput(_VerbInput):
    wallet_address: str | None = optional_text(128, "Filter by wallet address")
    query: str | None = optional_text(
        512,
        "Only engrams whose key or content contains this text (case-insensitive)",
    )
    engram_type: EngramType | None = Field(default=None, description="Filter by type")
    tags: list[str] = Field(
        default_factory=list, max_length=MAX_TAGS, description="Filter by tags (any of them)"
    )
    limit: int = Field(default=20, ge=1, le=100, description="Max results (default 20)")
    offset: int = Field(default=0, ge=0, le=100_000, description="Pagination offset")


class EngramUpdateInput(_VerbInput):
    id: str = Field(min_length=1, max_length=64, description="Engram ID to update")
    content: str = Field(
        min_length=1, max_length=MAX_CONTENT_CHARS, description="New JSON string content"
    )
    tags: list[str] | None = Field(
        default=None, max_length=MAX_TAGS, description="New tags (replaces existing)"
    )


class EngramDeleteInput(_VerbInput):
    id: str = Field(min_length=1, max_length=64, description="Engram ID to delete")


class EngramListByTypeInput(_VerbInput):
    wallet_address: str = Field(
        min_length=1, max_length=128, description="Wallet address to list engrams for"
    )
    engram_type: EngramType = Field(description="Type filter")
    limit: int = Field(default=50, ge=1, le=200, description="Max results (default 50)")
    offset: int = Field(default=0, ge=0, le=100_000, description="Pagination offset")


class UserProfileGetInput(_VerbInput):
    wallet_address: str = Field(
        min_length=1, max_length=128, description="Wallet address to get profile for"
    )


class UserProfileUpdateInput(_VerbInput):
    wallet_address: WalletText = Field(
        min_length=1,
        max_length=128,
        pattern=_WALLET_PATTERN,
        description="Wallet address to update",
    )
    field: str = Field(
        min_length=1,
        max_length=128,
        pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$",
        description="Profile field name (e.g., `base`)",
    )
    content: str = Field(
        min_length=1, max_length=MAX_CONTENT_CHARS, description="New JSON string content"
    )


class Engram(BaseModel):
    """An engram as the engram tools show it (the memory record seen through seed 004)."""

    id: str
    wallet_address: str
    engram_type: EngramType
    key: str
    content: str
    tags: list[str]
    is_public: bool
    pinned: bool = False
    created_at: datetime
    updated_at: datetime
    created_by: str

    @classmethod
    def of(cls, memory: Memory) -> Engram:
        """The memory's own fields, read by name (a memory that is no engram fails here)."""
        return cls.model_validate({**dict(memory), "is_public": bool(memory.is_public)})


class EngramOutput(BaseModel):
    """`{"engram": null}` when absent (engram_get)."""

    engram: Engram | None


class EngramListOutput(BaseModel):
    engrams: list[Engram]
    total: int
    next_offset: int | None


class EngramDeleteOutput(BaseModel):
    id: str
    deleted: Literal[True] = True


class UserProfileOutput(BaseModel):
    """The wallet's `user.profile.<field>` persona engrams, each field's JSON parsed."""

    wallet_address: str
    profile: dict[str, Any]
    engrams: list[Engram]
