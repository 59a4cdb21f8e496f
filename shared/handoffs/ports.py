"""What the handoff service needs from storage."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Protocol

from shared.domain_events.models import DomainEvent
from shared.handoffs.models import Claim, Handoff
from shared.storage.pages import Page


@dataclass(frozen=True)
class OpenHandoffFilter:
    """Which open handoffs a listing keeps: every field given must match exactly."""

    project_key: str | None = None
    cwd: str | None = None
    harness: str | None = None

    def given(self) -> dict[str, str]:
        """The fields given, by name: each is a stored attribute (DynamoDB) and a column
        (SQLite) of the same name."""
        return {name: value for name, value in asdict(self).items() if value is not None}


class HandoffStore(Protocol):
    """Handoffs of one team at a time; a claim is one conditional write.

    `events` are the change's domain events, written to the team's event log in the change's
    own transaction: none when it is refused, always when it is stored."""

    def create(self, team: str, handoff: Handoff, *, events: Sequence[DomainEvent] = ()) -> None:
        """Insert a new handoff (ids are random: an existing id is a bug, never overwritten)."""
        ...

    def get(self, team: str, handoff_id: str) -> Handoff | None: ...

    def claim(
        self,
        team: str,
        handoff_id: str,
        claim: Claim,
        *,
        events: Sequence[DomainEvent] = (),
    ) -> Handoff:
        """Mark an open handoff claimed: `UnknownHandoff` or `AlreadyClaimed` when it is not."""
        ...

    def list_open(
        self,
        team: str,
        wanted: OpenHandoffFilter,
        *,
        limit: int,
        cursor: str | None = None,
    ) -> Page[Handoff]:
        """The team's unclaimed handoffs matching `wanted`, newest first (then by id)."""
        ...


class UnknownHandoff(Exception):
    """No handoff with that id in the team."""


class AlreadyClaimed(Exception):
    """Another claim won the race; carries the existing claim."""

    def __init__(self, claim: Claim | None) -> None:
        super().__init__("already claimed")
        self.claim = claim
