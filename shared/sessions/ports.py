"""What the session service needs: its store, the engrams (memory) and a model catalog."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from shared.auth.principal import Principal
from shared.sessions.models import (
    Message,
    ModelChoice,
    ModelInfo,
    Persona,
    RememberedEngram,
    Session,
)
from shared.storage.pages import Page


@dataclass(frozen=True)
class SessionOwner:
    """Whose sessions a listing reads: one persona's with one wallet."""

    persona: Persona
    wallet: str


class SessionStore(Protocol):
    """Sessions, their messages and the personas' model choices, one team at a time."""

    def create(self, team: str, session: Session, messages: list[Message]) -> None:
        """Insert a new session with its first messages (ids are random: never overwritten)."""
        ...

    def get(self, team: str, session_id: str) -> Session | None: ...

    def messages(self, team: str, session_id: str, last: int | None = None) -> list[Message]:
        """The session's messages in order — only the `last` ones when given (empty for an
        unknown session)."""
        ...

    def append(
        self, team: str, session_id: str, messages: list[tuple[str, str]], now: datetime
    ) -> tuple[Session, list[Message]]:
        """Append `(role, content)` messages atomically, numbered after the last one, and
        move `updated_at` to `now`; `UnknownSession` when there is no such session,
        `SessionBusy` when other writes of it kept winning (never a half-written append)."""
        ...

    def touch(self, team: str, session_id: str, now: datetime) -> Session:
        """Move `updated_at` to `now` (a resumed session is the most recent); `UnknownSession`."""
        ...

    def set_pinned(self, team: str, session_id: str, pinned: bool) -> Session:
        """`UnknownSession` when there is no such session."""
        ...

    def delete(self, team: str, session_id: str) -> Session:
        """Delete an unpinned session and its messages in one step: `UnknownSession`, or
        `SessionPinned(session)` when it is pinned (then nothing is deleted)."""
        ...

    def list_owner(
        self, team: str, owner: SessionOwner, *, limit: int, cursor: str | None = None
    ) -> Page[Session]:
        """The persona's sessions with the wallet, most recently updated first (then by id)."""
        ...

    def claim_for_compaction(
        self, team: str, session_id: str, claimer: str, now: datetime, until: datetime
    ) -> Session:
        """Claim an unpinned session for one cleanup (one conditional write): `CompactionLost`
        when it is pinned, gone, or claimed by another cleanup whose lease runs past `now`."""
        ...

    def delete_compacted(
        self, team: str, session_id: str, claimer: str, seen_updated_at: datetime
    ) -> bool:
        """Delete a session this cleanup claimed, with its messages, only while the claim is
        still `claimer`'s, it is unpinned and unchanged since it was summarised
        (`updated_at`); False (nothing deleted) otherwise."""
        ...

    def release_compaction(self, team: str, session_id: str, claimer: str) -> None:
        """Drop `claimer`'s claim (a session that changed while it was summarised stays)."""
        ...

    def put_model(self, team: str, choice: ModelChoice) -> None:
        """Record the persona's model for `choice.wallet_address` (None: the team default)."""
        ...

    def get_model(self, team: str, persona: Persona, wallet: str | None) -> ModelChoice | None:
        """The choice made for exactly that wallet (None: the team default), if any."""
        ...


class UnknownSession(Exception):
    """No session with that id in the team."""


class SessionBusy(Exception):
    """An append lost to other writes of the session on every attempt (a retry may succeed)."""


class SessionPinned(Exception):
    """The session is pinned: delete refuses it."""

    def __init__(self, session: Session) -> None:
        super().__init__(f"session {session.id} is pinned")
        self.session = session


class CompactionLost(Exception):
    """Another cleanup holds the session, or it is pinned or gone."""


# An engram as the session tools see it (the memory record keyed by wallet and key): the very
# model hecate_remember answers with.
StoredEngram = RememberedEngram


@dataclass(frozen=True)
class NewEngram:
    """What the persona tools write: the wallet's engram under `key`."""

    wallet: str
    key: str
    engram_type: str
    content: str
    tags: tuple[str, ...] = ()


class Engrams(Protocol):
    """The memory group's engrams, as the persona tools use them (same records as
    `engram_get` and `recall` read)."""

    def put(self, principal: Principal, engram: NewEngram) -> tuple[StoredEngram, bool]:
        """Create or replace the wallet's engram under `key` (idempotent; its content only);
        True when created."""
        ...

    def create(self, principal: Principal, engram: NewEngram) -> StoredEngram:
        """A new engram; the domain error `Conflict` when the key is taken."""
        ...

    def set_pinned(self, principal: Principal, *, engram_id: str, pinned: bool) -> StoredEngram:
        """Pin or unpin an engram of the caller's team (`NotFound` naming `id` otherwise)."""
        ...


class ModelCatalog(Protocol):
    """The models a persona may switch to."""

    def models(self) -> list[ModelInfo]: ...
