"""Memory: tool inputs and outputs (seed 000 shapes) and the domain record."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

MAX_CONTENT_CHARS = 100_000
MAX_TAGS = 50


class _ToolInput(BaseModel):
    # Seed 000 lists a `token` argument for clients that cannot send headers. cairn authenticates
    # by the Authorization header only, so the argument is accepted and ignored: the identity of
    # a call never comes from its arguments.
    model_config = ConfigDict(extra="forbid")

    token: str | None = Field(
        default=None, description="Ignored: cairn authenticates by the Authorization header."
    )


class MemoryPutInput(_ToolInput):
    key: str = Field(min_length=1, max_length=512, description="Memory key.")
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
    id: str | None = Field(default=None, min_length=1, description="Memory id.")
    key: str | None = Field(default=None, min_length=1, description="Memory key.")


class MemorySearchInput(_ToolInput):
    query: str = Field(min_length=1, max_length=4096, description="Search query string.")
    limit: int = Field(default=20, ge=1, le=100, description="Maximum number of entries to return.")


class Memory(BaseModel):
    """A memory as tools return it (seed 000's shape plus its `id` and author)."""

    id: str
    key: str | None = None
    content: str
    tags: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime
    updated_at: datetime
    expires_at: datetime | None = None
    created_by: str

    def is_expired(self, now: datetime) -> bool:
        return self.expires_at is not None and self.expires_at <= now


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
