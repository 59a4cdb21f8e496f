"""Handoffs (seed 002): tool inputs and outputs, and the stored record.

Seed 002 specifies the arguments of store_handoff, list_handoffs and claim_handoff but not their
responses; cairn's choices are documented in docs/handoffs.md.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from shared.model_fields import optional_text

MAX_DOCUMENT_CHARS = 200_000
MAX_TITLE_CHARS = 300
MAX_FIELD_CHARS = 1_024
MAX_TAGS = 20

HandoffStatus = Literal["open", "claimed"]


class _Input(BaseModel):
    # Seed 002: parameters marked server-populated (the agent) come from the token; anything the
    # seed does not list is refused so a typo never passes silently.
    model_config = ConfigDict(extra="forbid")


class StoreHandoffInput(_Input):
    title: str = Field(
        min_length=1,
        max_length=MAX_TITLE_CHARS,
        description="A short, human-scannable title for the handoff, shown in the takeover picker.",
    )
    document_md: str = Field(
        min_length=1,
        max_length=MAX_DOCUMENT_CHARS,
        description="The handoff document in Markdown. It must contain exactly the five required "
        "sections — Start & intent, Journey, Current state, What’s left, Open questions — or it "
        "is rejected.",
    )
    project_key: str | None = optional_text(
        MAX_FIELD_CHARS,
        "Optional project this handoff belongs to, used to scope the takeover picker "
        "to the right project.",
    )
    source_ref: str | None = optional_text(
        MAX_FIELD_CHARS,
        "Optional stable reference to where the work lives — a harness "
        "conversation/run id, or a cwd-prefixed absolute path — so the next agent can resume in "
        "place.",
    )
    cwd: str | None = optional_text(
        MAX_FIELD_CHARS,
        "Optional working directory the handoff was created in, used as a default takeover filter.",
    )
    harness: str | None = optional_text(
        MAX_FIELD_CHARS,
        "Optional name of the harness the handoff was created in (e.g. claude-code, "
        "codex), recorded for context.",
    )
    tags: list[str] = Field(
        default_factory=list,
        max_length=MAX_TAGS,
        description="Optional labels for the handoff, to aid discovery in the picker.",
    )


class ListHandoffsInput(_Input):
    project_key: str | None = optional_text(
        None,
        "Restrict to handoffs for this project. The default scope is the caller’s "
        "current project; drop this filter to broaden when nothing matches.",
    )
    cwd: str | None = optional_text(
        None,
        "Restrict to handoffs created in this working directory; drop it to broaden the search.",
    )
    harness: str | None = optional_text(
        None, "Restrict to handoffs created in this harness; drop it to broaden across harnesses."
    )
    limit: int = Field(
        default=20, ge=1, le=100, description="Maximum number of handoffs to return."
    )


class ClaimHandoffInput(_Input):
    handoff_id: str = Field(
        min_length=1,
        max_length=64,
        description="The id of the handoff to claim, taken from a list_handoffs result.",
    )
    claiming_agent_id: str | None = optional_text(
        MAX_FIELD_CHARS,
        "Optional identity of the agent taking over, recorded on the claim so others "
        "see who has it.",
    )
    claiming_harness: str | None = optional_text(
        MAX_FIELD_CHARS, "Optional harness the takeover is happening in, recorded on the claim."
    )
    claiming_source_ref: str | None = optional_text(
        MAX_FIELD_CHARS,
        "Optional stable reference to where the resumed work now lives — a "
        "conversation/run id, or a cwd-prefixed absolute path.",
    )
    claiming_cwd: str | None = optional_text(
        MAX_FIELD_CHARS, "Optional working directory the takeover is happening in."
    )


class Claim(BaseModel):
    """Who took a handoff over, where, and when.

    `agent_id` is the claimant as cairn knows it (the token's bound agent, else `token:<id>`):
    the holder to trust. `claiming_agent_id`, `harness`, `source_ref` and `cwd` are the
    claimant's own description of itself, recorded as given (seed 002's `claiming_*`)."""

    agent_id: str
    claiming_agent_id: str | None = None
    harness: str | None = None
    source_ref: str | None = None
    cwd: str | None = None
    claimed_at: datetime


class HandoffSummary(BaseModel):
    """A handoff as the takeover picker shows it (no document)."""

    id: str
    title: str
    project_key: str | None = None
    source_ref: str | None = None
    cwd: str | None = None
    harness: str | None = None
    tags: list[str] = Field(default_factory=list)
    created_by: str
    created_at: datetime
    status: HandoffStatus


class Handoff(HandoffSummary):
    """The whole record: the document and, once claimed, the claim."""

    document_md: str
    claim: Claim | None = None

    def summary(self) -> HandoffSummary:
        return HandoffSummary.model_validate(
            self.model_dump(include=set(HandoffSummary.model_fields))
        )


class StoreHandoffOutput(BaseModel):
    handoff: HandoffSummary


class ListHandoffsOutput(BaseModel):
    handoffs: list[HandoffSummary]


class ClaimHandoffOutput(BaseModel):
    """The claimed handoff with its document, to resume from."""

    handoff: Handoff
