"""The handoffs tool group: seed 002's store_handoff, list_handoffs and claim_handoff.

Descriptions are seed 002's text verbatim ("the exact text an agent receives at call time").
"""

from __future__ import annotations

from shared.handoffs.group import GROUP
from shared.handoffs.models import (
    ClaimHandoffInput,
    ClaimHandoffOutput,
    ListHandoffsInput,
    ListHandoffsOutput,
    StoreHandoffInput,
    StoreHandoffOutput,
)
from shared.handoffs.service import HandoffService
from shared.tools.registry import APPEND, READ_ONLY, ToolContext

SCOPE = "handoff"


@GROUP.tool(
    name="store_handoff",
    title="Store a handoff",
    description=(
        "Hand work off: persist a handoff document so another agent — on any harness — can "
        "resume your work later. Call it when pausing mid-task or ending a session that isn’t "
        "finished. The document must carry exactly these five sections — Start & intent, "
        "Journey, Current state, What’s left, Open questions — or it is rejected. The other "
        "side picks it up with list_handoffs then claim_handoff."
    ),
    scopes=(SCOPE,),
    # Each call files a new handoff: not idempotent, but nothing existing is overwritten.
    annotations=APPEND,
)
def store_handoff(ctx: ToolContext[HandoffService], args: StoreHandoffInput) -> StoreHandoffOutput:
    return StoreHandoffOutput(handoff=ctx.service.store_handoff(ctx.principal, args))


@GROUP.tool(
    name="list_handoffs",
    title="List open handoffs",
    description=(
        "Take over work, step 1: list the unclaimed handoffs waiting to be picked up, then "
        "claim_handoff the one you want. Default scope is the caller’s current project_key + "
        "cwd when both are supplied; drop either filter to broaden when nothing matches."
    ),
    scopes=(SCOPE,),
    annotations=READ_ONLY,
)
def list_handoffs(ctx: ToolContext[HandoffService], args: ListHandoffsInput) -> ListHandoffsOutput:
    return ListHandoffsOutput(handoffs=ctx.service.list_open(ctx.principal, args))


@GROUP.tool(
    name="claim_handoff",
    title="Claim a handoff",
    description=(
        "Take over work, step 2 (after list_handoffs): atomically claim a handoff and receive "
        "its document to resume from. Claims race — 404 if the id is unknown; 409 if another "
        "agent claimed first (the existing claim is included so you can say who has it and "
        "since when)."
    ),
    scopes=(SCOPE,),
    # A claim succeeds once; a second call gets 409. It adds a claim, it erases nothing.
    annotations=APPEND,
)
def claim_handoff(ctx: ToolContext[HandoffService], args: ClaimHandoffInput) -> ClaimHandoffOutput:
    return ClaimHandoffOutput(handoff=ctx.service.claim(ctx.principal, args))
