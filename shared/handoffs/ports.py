"""What the handoff service needs from storage."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from shared.handoffs.models import Claim, Handoff


class HandoffStore(Protocol):
    """Handoffs of one team at a time; a claim is one conditional write."""

    def create(self, team: str, handoff: Handoff) -> None: ...

    def get(self, team: str, handoff_id: str) -> Handoff | None: ...

    def claim(self, team: str, handoff_id: str, claim: Claim) -> Handoff:
        """Mark an open handoff claimed: `UnknownHandoff` or `AlreadyClaimed` when it is not."""
        ...

    def iter_open(self, team: str) -> Iterator[Handoff]:
        """The team's unclaimed handoffs, newest first."""
        ...


class UnknownHandoff(Exception):
    """No handoff with that id in the team."""


class AlreadyClaimed(Exception):
    """Another claim won the race; carries the existing claim."""

    def __init__(self, claim: Claim | None) -> None:
        super().__init__("already claimed")
        self.claim = claim
