"""The handoff service: store, list and claim, always within one team."""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from shared.auth.principal import Principal
from shared.domain_events.emitter import DomainEvents
from shared.domain_events.models import Kind
from shared.handoffs.models import (
    Claim,
    ClaimHandoffInput,
    Handoff,
    HandoffSummary,
    ListHandoffsInput,
    StoreHandoffInput,
)
from shared.handoffs.ports import AlreadyClaimed, HandoffStore, OpenHandoffFilter, UnknownHandoff
from shared.handoffs.sections import REQUIRED_SECTIONS, section_problem
from shared.tools.errors import Conflict, InvalidArgument, NotFound


def new_handoff_id() -> str:
    return "hof_" + secrets.token_hex(12)


@dataclass(frozen=True)
class HandoffService:
    """Seed 002's store_handoff / list_handoffs / claim_handoff over a `HandoffStore`; each
    takes its tool's arguments as they came."""

    store: HandoffStore
    clock: Callable[[], float] = time.time
    events: DomainEvents = field(default_factory=DomainEvents)

    def _now(self) -> datetime:
        return datetime.fromtimestamp(self.clock(), tz=UTC)

    def store_handoff(self, principal: Principal, args: StoreHandoffInput) -> HandoffSummary:
        """Persist a handoff whose document has exactly the five required sections."""
        if problem := section_problem(args.document_md):
            raise InvalidArgument(
                f"`document_md` {problem}; give it exactly these five sections, each as a "
                f"Markdown heading: {', '.join(REQUIRED_SECTIONS)}",
                field="document_md",
            )
        handoff = Handoff.model_validate(
            {
                **args.model_dump(),
                "id": new_handoff_id(),
                "title": args.title.strip() or args.title,
                "tags": list(dict.fromkeys(args.tags)),
                "created_by": principal.actor,
                "created_at": self._now(),
                "status": "open",
            }
        )
        stored = self.events.event(
            principal.team, Kind.HANDOFF_STORED, principal.actor, handoff_id=handoff.id
        )
        self.store.create(principal.team, handoff, events=[stored])
        return handoff.summary()

    def list_open(self, principal: Principal, args: ListHandoffsInput) -> list[HandoffSummary]:
        """The team's unclaimed handoffs matching every filter given, newest first."""
        wanted = OpenHandoffFilter(project_key=args.project_key, cwd=args.cwd, harness=args.harness)
        page = self.store.list_open(principal.team, wanted, limit=args.limit)
        return [handoff.summary() for handoff in page.items]

    def claim(self, principal: Principal, args: ClaimHandoffInput) -> Handoff:
        """Atomically claim an open handoff.

        `NotFound` (seed 002's 404) for an unknown id; `Conflict` (409) carrying the existing
        claim when another agent claimed first. The holder (`claim.agent_id`) is always the
        token's identity; `claiming_agent_id` is recorded beside it as the claimant's own words.
        """
        handoff_id = args.handoff_id
        claim = Claim(
            agent_id=principal.actor,
            claiming_agent_id=args.claiming_agent_id,
            harness=args.claiming_harness,
            source_ref=args.claiming_source_ref,
            cwd=args.claiming_cwd,
            claimed_at=self._now(),
        )
        unknown = NotFound(
            f"`handoff_id`: no handoff with id {handoff_id!r} in your team; use an id "
            "from list_handoffs",
            field="handoff_id",
        )
        # Read first: the claim's event names the handoff's author, and is written in the
        # claim's own transaction (the store's condition, still open, decides the race).
        current = self.store.get(principal.team, handoff_id)
        if current is None:
            raise unknown
        event = self.events.event(
            principal.team,
            Kind.HANDOFF_CLAIMED,
            principal.actor,
            handoff_id=current.id,
            created_by=current.created_by,
        )
        try:
            claimed = self.store.claim(principal.team, handoff_id, claim, events=[event])
        except UnknownHandoff as exc:
            raise unknown from exc
        except AlreadyClaimed as exc:
            holder = exc.claim.model_dump(mode="json") if exc.claim else {}
            who = (
                f" by {exc.claim.agent_id} at {exc.claim.claimed_at.isoformat()}"
                if exc.claim
                else ""
            )
            raise Conflict(
                f"`handoff_id`: handoff {handoff_id!r} is already claimed{who}; pick another "
                "from list_handoffs (it lists only open ones)",
                field="handoff_id",
                holder=holder,
            ) from exc
        return claimed
