"""Persona sessions (seed 004's hecate_* and moros_* tools): records, tool inputs and outputs.

Seed 004 gives the tools' names, arguments and annotations but no responses; cairn's choices
(and the two tools it adds: `session_append_messages` and `session_pin`) are documented in
docs/sessions.md.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from shared.storage.values import utf8_at_most

Persona = Literal["hecate", "moros"]
PERSONAS: tuple[Persona, ...] = ("hecate", "moros")
Role = Literal["user", "assistant", "system", "tool"]
# Seed 004's hecate_remember / moros_remember types (a subset of the engram types).
RememberType = Literal["persona", "preference", "knowledge"]

MAX_MESSAGE_CHARS = 50_000
MAX_MESSAGES_PER_APPEND = 50
MAX_APPEND_CHARS = 200_000
MAX_REMEMBER_CHARS = 100_000
# `#` separates wallet, persona and ids in keys (as in the engram alias key).
_WALLET_PATTERN = r"^[^#]+$"
WalletText = Annotated[str, utf8_at_most(128)]
KeyText = Annotated[str, utf8_at_most(512)]


# --------------------------------------------------------------------------- records


class Message(BaseModel):
    """One message of a session, numbered from 1 in the order it was appended."""

    seq: int
    role: Role
    content: str
    at: datetime


class ModelInfo(BaseModel):
    """A model of the catalog (the shipped file, a configured one, or Bedrock's list)."""

    id: str
    name: str
    provider: str
    aliases: list[str] = Field(default_factory=list)


class ModelChoice(BaseModel):
    """The model a persona uses for a wallet (or for the whole team when `wallet_address` is
    None), and who chose it."""

    persona: Persona
    wallet_address: str | None = None
    model: ModelInfo
    chosen_by: str
    chosen_at: datetime


class Session(BaseModel):
    """A conversation of one persona with one wallet; its messages are stored beside it."""

    id: str
    persona: Persona
    wallet_address: str
    title: str | None = None
    created_at: datetime
    updated_at: datetime
    message_count: int = 0
    pinned: bool = False
    created_by: str
    # A cleanup that claimed the session for compaction, until when (a lease: a crashed
    # cleanup's claim lapses and the next cleanup takes the session over).
    compacting_by: str | None = None
    compacting_until: datetime | None = None

    def summary(self) -> SessionSummary:
        return SessionSummary.model_validate(
            self.model_dump(include=set(SessionSummary.model_fields))
        )

    def appended(
        self, messages: list[tuple[str, str]], now: datetime
    ) -> tuple[Session, list[Message]]:
        """This session once `messages` ((role, content) pairs) are added at `now`, and those
        messages, numbered on from its last; what a store then writes, conditionally."""
        added = [
            Message.model_validate(
                {"seq": self.message_count + i, "role": role, "content": content, "at": now}
            )
            for i, (role, content) in enumerate(messages, start=1)
        ]
        updated = self.model_copy(
            update={
                "message_count": self.message_count + len(added),
                "updated_at": now,
                "title": self.title or title_of(added),
            }
        )
        return updated, added


class SessionSummary(BaseModel):
    """A session as a listing shows it (no messages)."""

    id: str
    persona: Persona
    wallet_address: str
    title: str | None
    created_at: datetime
    updated_at: datetime
    message_count: int
    pinned: bool


# --------------------------------------------------------------------------- tool inputs


class _Input(BaseModel):
    # Identity comes from the token; an argument the seed does not list is refused.
    model_config = ConfigDict(extra="forbid")


def _wallet(description: str) -> WalletText:
    return Field(  # type: ignore[no-any-return]
        min_length=1, max_length=128, pattern=_WALLET_PATTERN, description=description
    )


def _session_id(description: str) -> str:
    return Field(  # type: ignore[no-any-return]
        min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_-]+$", description=description
    )


class NewSessionInput(_Input):
    wallet_address: WalletText = _wallet("Wallet address of the user")


class ListSessionsInput(_Input):
    wallet_address: WalletText = _wallet("Wallet address of the user")
    limit: int = Field(default=20, ge=1, le=100, description="Max sessions to return (default 20)")


class ResumeSessionInput(_Input):
    wallet_address: WalletText = _wallet("Wallet address of the user")
    session_id: str = _session_id("ID of the session to resume")


class DeleteSessionInput(_Input):
    wallet_address: WalletText = _wallet("Wallet address of the user")
    session_id: str = _session_id("ID of the session to delete")


def _key(description: str) -> KeyText:
    return Field(  # type: ignore[no-any-return]
        min_length=1,
        max_length=512,
        pattern=r"^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$",
        description=description,
    )


class RememberInput(_Input):
    wallet_address: WalletText = _wallet("Wallet address of the visitor")
    key: KeyText = _key("Dot-path key (e.g., `visitor.preference.chains`)")
    content: str = Field(
        min_length=1, max_length=MAX_REMEMBER_CHARS, description="Information to remember"
    )
    engram_type: RememberType = Field(
        default="knowledge", description="`persona`, `preference`, `knowledge`"
    )


class MorosRememberInput(RememberInput):
    # Seed 004 describes Moros's key more tersely than Hecate's; the rules are the same.
    key: KeyText = _key("Dot-path key")


class CleanupInput(_Input):
    wallet_address: WalletText = _wallet("Wallet address to clean up")


class PinEngramInput(_Input):
    id: str = Field(min_length=1, max_length=64, description="Engram ID to pin")


class UnpinEngramInput(_Input):
    id: str = Field(min_length=1, max_length=64, description="Engram ID to unpin")


class SetModelInput(_Input):
    query: str = Field(
        min_length=1,
        max_length=200,
        description="Model name or keyword (e.g., `opus`, `claude-sonnet`, `gpt-4o`)",
    )
    # Not in seed 004 (whose set_model takes only `query`): optional, so the seed's calls work
    # unchanged and set the persona's model for the whole team.
    wallet_address: WalletText | None = Field(
        default=None,
        min_length=1,
        max_length=128,
        pattern=_WALLET_PATTERN,
        description="Optional: switch the model for this wallet only (default: for every "
        "wallet of the team that has not chosen its own)",
    )


class MorosSetModelInput(SetModelInput):
    query: str = Field(min_length=1, max_length=200, description="Model name or keyword")


class NewMessage(BaseModel):
    model_config = ConfigDict(extra="forbid")

    role: Role = Field(description="`user`, `assistant`, `system` or `tool`")
    content: str = Field(min_length=1, max_length=MAX_MESSAGE_CHARS, description="The text")


class AppendMessagesInput(_Input):
    wallet_address: WalletText = _wallet("Wallet address of the user")
    persona: Persona = Field(description="`hecate` or `moros`: whose session it is")
    session_id: str | None = Field(
        default=None,
        min_length=1,
        max_length=64,
        pattern=r"^[A-Za-z0-9_-]+$",
        description="The session to append to; omit it to start a new session with these messages",
    )
    messages: list[NewMessage] = Field(
        min_length=1,
        max_length=MAX_MESSAGES_PER_APPEND,
        description=f"Messages in conversation order (1 to {MAX_MESSAGES_PER_APPEND})",
    )

    # A field validator (not a model validator), so the error names `messages`.
    @field_validator("messages")
    @classmethod
    def _bounded(cls, messages: list[NewMessage]) -> list[NewMessage]:
        total = sum(len(m.content) for m in messages)
        if total > MAX_APPEND_CHARS:
            raise ValueError(
                f"they hold {total} characters in all; at most {MAX_APPEND_CHARS} per call: "
                "split them over several calls"
            )
        return messages


class PinSessionInput(_Input):
    wallet_address: WalletText = _wallet("Wallet address of the user")
    persona: Persona = Field(description="`hecate` or `moros`: whose session it is")
    session_id: str = _session_id("ID of the session to pin or unpin")
    pinned: bool = Field(
        default=True,
        description="true pins (cleanup keeps it, delete refuses it); false removes the pin",
    )


# --------------------------------------------------------------------------- tool outputs


class SessionOutput(BaseModel):
    """A session and the model its persona uses for the wallet (None: no choice made yet)."""

    session: SessionSummary
    model: ModelChoice | None


class SessionListOutput(BaseModel):
    sessions: list[SessionSummary]
    model: ModelChoice | None


class ResumeSessionOutput(BaseModel):
    """The session's history, oldest first: its newest messages when it is very long (the
    `earlier_messages` before them are left out)."""

    session: SessionSummary
    messages: list[Message]
    earlier_messages: int
    model: ModelChoice | None


class DeleteSessionOutput(BaseModel):
    session_id: str
    deleted: Literal[True] = True
    model: ModelChoice | None


class AppendMessagesOutput(BaseModel):
    session: SessionSummary
    appended: list[Message]
    model: ModelChoice | None


class CompactedSession(BaseModel):
    id: str
    title: str | None
    message_count: int
    created_at: datetime
    updated_at: datetime


class CleanupOutput(BaseModel):
    """What one cleanup compacted: the sessions summarised into `summary_engram_id` and
    removed, and how many it kept."""

    persona: Persona
    wallet_address: str
    compacted: list[CompactedSession]
    kept: int
    summary_engram_id: str | None
    summary_key: str | None


class PinnedEngram(BaseModel):
    id: str
    wallet_address: str
    key: str
    engram_type: str
    pinned: bool


class PinEngramOutput(BaseModel):
    engram: PinnedEngram


class RememberedEngram(BaseModel):
    id: str
    wallet_address: str
    key: str
    engram_type: str
    content: str
    pinned: bool
    created_at: datetime
    updated_at: datetime


class RememberOutput(BaseModel):
    engram: RememberedEngram
    created: bool


class SetModelOutput(BaseModel):
    """`switched` with the choice, or `ambiguous` with the candidates (nothing changed)."""

    status: Literal["switched", "ambiguous"]
    choice: ModelChoice | None = None
    candidates: list[ModelInfo] = Field(default_factory=list)
    message: str


def title_of(messages: list[Message]) -> str | None:
    """A session's title: the start of its first user message (what a picker shows)."""
    for message in messages:
        if message.role == "user":
            text = " ".join(message.content.split())
            return text if len(text) <= 80 else text[:79] + "…"
    return None
