"""The handoff service: store, list and claim, always within one team."""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from datetime import UTC, datetime

from shared.auth.principal import Principal
from shared.domain_events.emitter import DomainEvents
from shared.domain_events.models import Kind
from shared.handoffs.models import Claim, Handoff, HandoffSummary
from shared.handoffs.ports import AlreadyClaimed, HandoffStore, OpenHandoffFilter, UnknownHandoff
from shared.handoffs.sections import REQUIRED_SECTIONS, section_problem
from shared.tools.errors import Conflict, InvalidArgument, NotFound


def new_handoff_id() -> str:
    return "hof_" + secrets.token_hex(12)


class HandoffService:
    """Seed 002's store_handoff / list_handoffs / claim_handoff over a `HandoffStore`."""

    def __init__(
        self,
        store: HandoffStore,
        clock: Callable[[], float] = time.time,
        events: DomainEvents | None = None,
    ) -> None:
        self._store = store
        self._clock = clock
        self._events = events or DomainEvents()

    def _now(self) -> datetime:
        return datetime.fromtimestamp(self._clock(), tz=UTC)

    def store(
        self,
        principal: Principal,
        *,
        title: str,
        document_md: str,
        project_key: str | None = None,
        source_ref: str | None = None,
        cwd: str | None = None,
        harness: str | None = None,
        tags: list[str] | None = None,
    ) -> HandoffSummary:
        """Persist a handoff whose document has exactly the five required sections."""
        if problem := section_problem(document_md):
            raise InvalidArgument(
                f"`document_md` {problem}; give it exactly these five sections, each as a "
                f"Markdown heading: {', '.join(REQUIRED_SECTIONS)}",
                field="document_md",
            )
        handoff = Handoff(
            id=new_handoff_id(),
            title=title.strip() or title,
            document_md=document_md,
            project_key=project_key,
            source_ref=source_ref,
            cwd=cwd,
            harness=harness,
            tags=list(dict.fromkeys(tags or [])),
            created_by=principal.actor,
            created_at=self._now(),
            status="open",
        )
        stored = self._events.event(
            principal.team, Kind.HANDOFF_STORED, principal.actor, handoff_id=handoff.id
        )
        self._store.create(principal.team, handoff, events=[stored])
        return handoff.summary()

    def list_open(
        self,
        principal: Principal,
        *,
        project_key: str | None = None,
        cwd: str | None = None,
        harness: str | None = None,
        limit: int = 20,
    ) -> list[HandoffSummary]:
        """The team's unclaimed handoffs matching every filter given, newest first."""
        wanted = OpenHandoffFilter(project_key=project_key, cwd=cwd, harness=harness)
        page = self._store.list_open(principal.team, wanted, limit=limit)
        return [handoff.summary() for handoff in page.items]

    def claim(
        self,
        principal: Principal,
        *,
        handoff_id: str,
        claiming_agent_id: str | None = None,
        claiming_harness: str | None = None,
        claiming_source_ref: str | None = None,
        claiming_cwd: str | None = None,
    ) -> Handoff:
        """Atomically claim an open handoff.

        `NotFound` (seed 002's 404) for an unknown id; `Conflict` (409) carrying the existing
        claim when another agent claimed first. The holder (`claim.agent_id`) is always the
        token's identity; `claiming_agent_id` is recorded beside it as the claimant's own words.
        """
        claim = Claim(
            agent_id=principal.actor,
            claiming_agent_id=claiming_agent_id,
            harness=claiming_harness,
            source_ref=claiming_source_ref,
            cwd=claiming_cwd,
            claimed_at=self._now(),
        )
        unknown = NotFound(
            f"`handoff_id`: no handoff with id {handoff_id!r} in your team; use an id "
            "from list_handoffs",
            field="handoff_id",
        )
        # Read first: the claim's event names the handoff's author, and is written in the
        # claim's own transaction (the store's condition, still open, decides the race).
        current = self._store.get(principal.team, handoff_id)
        if current is None:
            raise unknown
        event = self._events.event(
            principal.team,
            Kind.HANDOFF_CLAIMED,
            principal.actor,
            handoff_id=current.id,
            created_by=current.created_by,
        )
        try:
            claimed = self._store.claim(principal.team, handoff_id, claim, events=[event])
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
