"""The sessions tool group: seed 004's fourteen hecate_* and moros_* tools, plus the two the
seed lacks (`session_append_messages`, `session_pin`; see docs/sessions.md).

Descriptions are seed 004's; annotations are its summary table's (Write, Read-only, Idempotent,
Destructive), exactly.
"""

from __future__ import annotations

from shared.sessions.group import GROUP
from shared.sessions.models import (
    AppendMessagesInput,
    AppendMessagesOutput,
    CleanupInput,
    CleanupOutput,
    DeleteSessionInput,
    DeleteSessionOutput,
    ListSessionsInput,
    MorosRememberInput,
    MorosSetModelInput,
    NewSessionInput,
    Persona,
    PinEngramInput,
    PinEngramOutput,
    PinnedEngram,
    PinSessionInput,
    RememberInput,
    RememberOutput,
    ResumeSessionInput,
    ResumeSessionOutput,
    SessionListOutput,
    SessionOutput,
    SetModelInput,
    SetModelOutput,
    UnpinEngramInput,
)
from shared.sessions.ports import StoredEngram
from shared.sessions.service import SessionService
from shared.tools.registry import APPEND, READ_ONLY, Annotations, ToolContext

SESSIONS = ("sessions",)
MEMORY_WRITE = ("memory.write",)

# Seed 004's four annotation categories.
WRITE = APPEND
IDEMPOTENT_WRITE = Annotations(
    read_only=False, destructive=False, idempotent=True, open_world=False
)
DESTRUCTIVE = Annotations(read_only=False, destructive=True, idempotent=False, open_world=False)


# The output models name the stored engram's fields they show: read by attribute.
def _pinned(engram: StoredEngram) -> PinEngramOutput:
    return PinEngramOutput(engram=PinnedEngram.model_validate(engram, from_attributes=True))


def _remembered(engram: StoredEngram, created: bool) -> RememberOutput:
    return RememberOutput(engram=engram, created=created)


# --------------------------------------------------------------------------- Hecate sessions


@GROUP.tool(
    name="hecate_new_session",
    title="Hecate: new session",
    description="Create a new chat session. Clears current conversation and starts fresh.",
    scopes=SESSIONS,
    annotations=WRITE,
)
def hecate_new_session(ctx: ToolContext[SessionService], args: NewSessionInput) -> SessionOutput:
    session = ctx.service.new_session(ctx.principal, persona="hecate", wallet=args.wallet_address)
    return SessionOutput(
        session=session.summary(),
        model=ctx.service.model_for(ctx.principal, persona="hecate", wallet=args.wallet_address),
    )


@GROUP.tool(
    name="hecate_list_sessions",
    title="Hecate: list sessions",
    description="List all chat sessions for a wallet address. Returns session summaries sorted "
    "by most recently updated.",
    scopes=SESSIONS,
    annotations=READ_ONLY,
)
def hecate_list_sessions(
    ctx: ToolContext[SessionService], args: ListSessionsInput
) -> SessionListOutput:
    sessions = ctx.service.list_sessions(
        ctx.principal, persona="hecate", wallet=args.wallet_address, limit=args.limit
    )
    return SessionListOutput(
        sessions=[s.summary() for s in sessions],
        model=ctx.service.model_for(ctx.principal, persona="hecate", wallet=args.wallet_address),
    )


@GROUP.tool(
    name="hecate_resume_session",
    title="Hecate: resume a session",
    description="Resume an existing chat session. Loads the session's message history.",
    scopes=SESSIONS,
    annotations=WRITE,  # the resumed session becomes the most recently updated
)
def hecate_resume_session(
    ctx: ToolContext[SessionService], args: ResumeSessionInput
) -> ResumeSessionOutput:
    session, messages = ctx.service.resume(
        ctx.principal, persona="hecate", wallet=args.wallet_address, session_id=args.session_id
    )
    return ResumeSessionOutput(
        session=session.summary(),
        messages=messages,
        earlier_messages=session.message_count - len(messages),
        model=ctx.service.model_for(ctx.principal, persona="hecate", wallet=args.wallet_address),
    )


@GROUP.tool(
    name="hecate_delete_session",
    title="Hecate: delete a session",
    description="Delete a chat session. Cannot delete pinned sessions.",
    scopes=SESSIONS,
    annotations=DESTRUCTIVE,
)
def hecate_delete_session(
    ctx: ToolContext[SessionService], args: DeleteSessionInput
) -> DeleteSessionOutput:
    ctx.service.delete(
        ctx.principal, persona="hecate", wallet=args.wallet_address, session_id=args.session_id
    )
    return DeleteSessionOutput(
        session_id=args.session_id,
        model=ctx.service.model_for(ctx.principal, persona="hecate", wallet=args.wallet_address),
    )


# --------------------------------------------------------------------------- memory


def _remember(ctx: ToolContext[SessionService], args: RememberInput) -> RememberOutput:
    engram, created = ctx.service.remember(
        ctx.principal,
        wallet=args.wallet_address,
        key=args.key,
        content=args.content,
        engram_type=args.engram_type,
    )
    return _remembered(engram, created)


@GROUP.tool(
    name="hecate_remember",
    title="Hecate: remember",
    description="Proactively save important context about a visitor. Use when they share "
    "preferences, facts, decisions, or anything worth remembering.",
    scopes=MEMORY_WRITE,
    annotations=IDEMPOTENT_WRITE,
)
def hecate_remember(ctx: ToolContext[SessionService], args: RememberInput) -> RememberOutput:
    return _remember(ctx, args)


@GROUP.tool(
    name="moros_remember",
    title="Moros: remember",
    description="Proactively save important context about a visitor.",
    scopes=MEMORY_WRITE,
    annotations=IDEMPOTENT_WRITE,
)
def moros_remember(ctx: ToolContext[SessionService], args: MorosRememberInput) -> RememberOutput:
    return _remember(ctx, args)


# Engrams belong to the wallet, not to a persona: Hecate's and Moros's pin tools are one function
# registered twice (the lower decorator registers first, keeping the seed's order).
@GROUP.tool(
    name="moros_pin_engram",
    title="Moros: pin an engram",
    description="Pin an engram to protect it from cleanup/deletion.",
    scopes=MEMORY_WRITE,
    annotations=IDEMPOTENT_WRITE,
)
@GROUP.tool(
    name="hecate_pin_engram",
    title="Hecate: pin an engram",
    description="Pin an engram to protect it from cleanup/deletion.",
    scopes=MEMORY_WRITE,
    annotations=IDEMPOTENT_WRITE,
)
def pin_engram(ctx: ToolContext[SessionService], args: PinEngramInput) -> PinEngramOutput:
    return _pinned(ctx.service.pin_engram(ctx.principal, engram_id=args.id, pinned=True))


@GROUP.tool(
    name="moros_unpin_engram",
    title="Moros: unpin an engram",
    description="Remove pin protection from an engram.",
    scopes=MEMORY_WRITE,
    annotations=WRITE,
)
@GROUP.tool(
    name="hecate_unpin_engram",
    title="Hecate: unpin an engram",
    description="Remove pin protection from an engram, allowing deletion.",
    scopes=MEMORY_WRITE,
    annotations=WRITE,
)
def unpin_engram(ctx: ToolContext[SessionService], args: UnpinEngramInput) -> PinEngramOutput:
    return _pinned(ctx.service.pin_engram(ctx.principal, engram_id=args.id, pinned=False))


# --------------------------------------------------------------------------- cleanup


@GROUP.tool(
    name="hecate_cleanup",
    title="Hecate: compact old sessions",
    description="Compact old conversation sessions. Keeps 5 most recent and all pinned sessions.",
    scopes=SESSIONS,
    annotations=DESTRUCTIVE,
)
def hecate_cleanup(ctx: ToolContext[SessionService], args: CleanupInput) -> CleanupOutput:
    return _cleanup(ctx, args, "hecate")


@GROUP.tool(
    name="moros_cleanup",
    title="Moros: compact old sessions",
    description="Compact old conversation sessions. Keeps 5 most recent and all pinned.",
    scopes=SESSIONS,
    annotations=DESTRUCTIVE,
)
def moros_cleanup(ctx: ToolContext[SessionService], args: CleanupInput) -> CleanupOutput:
    return _cleanup(ctx, args, "moros")


def _cleanup(
    ctx: ToolContext[SessionService], args: CleanupInput, persona: Persona
) -> CleanupOutput:
    done = ctx.service.cleanup(ctx.principal, persona=persona, wallet=args.wallet_address)
    return CleanupOutput(
        persona=persona,
        wallet_address=args.wallet_address,
        compacted=done.compacted,
        kept=done.kept,
        summary_engram_id=done.summary.id if done.summary else None,
        summary_key=done.summary.key if done.summary else None,
    )


# --------------------------------------------------------------------------- models


@GROUP.tool(
    name="hecate_set_model",
    title="Hecate: switch model",
    description="Switch the AI model. Search by name or keyword.",
    scopes=SESSIONS,
    annotations=WRITE,
)
def hecate_set_model(ctx: ToolContext[SessionService], args: SetModelInput) -> SetModelOutput:
    return _set_model(ctx, args, "hecate")


@GROUP.tool(
    name="moros_set_model",
    title="Moros: switch model",
    description="Switch the AI model for Moros.",
    scopes=SESSIONS,
    annotations=WRITE,
)
def moros_set_model(ctx: ToolContext[SessionService], args: MorosSetModelInput) -> SetModelOutput:
    return _set_model(ctx, args, "moros")


def _set_model(
    ctx: ToolContext[SessionService], args: SetModelInput, persona: Persona
) -> SetModelOutput:
    switch = ctx.service.set_model(
        ctx.principal, persona=persona, query=args.query, wallet=args.wallet_address
    )
    return SetModelOutput(
        status="switched" if switch.choice else "ambiguous",
        choice=switch.choice,
        candidates=switch.candidates,
        message=switch.message,
    )


# --------------------------------------------------------------------------- not in the seed


@GROUP.tool(
    name="session_append_messages",
    title="Append messages to a persona session",
    description="Record a conversation: append messages (user, assistant, system or tool) to a "
    "Hecate or Moros session for a wallet, in order. Omit session_id to start a new session "
    "with them. For the persona's harness; hecate_resume_session returns what was recorded.",
    scopes=SESSIONS,
    annotations=WRITE,
)
def session_append_messages(
    ctx: ToolContext[SessionService], args: AppendMessagesInput
) -> AppendMessagesOutput:
    session, added = ctx.service.append(
        ctx.principal,
        persona=args.persona,
        wallet=args.wallet_address,
        session_id=args.session_id,
        messages=[(m.role, m.content) for m in args.messages],
    )
    return AppendMessagesOutput(
        session=session.summary(),
        appended=added,
        model=ctx.service.model_for(
            ctx.principal, persona=args.persona, wallet=args.wallet_address
        ),
    )


@GROUP.tool(
    name="session_pin",
    title="Pin or unpin a persona session",
    description="Pin a Hecate or Moros session so cleanup keeps it and delete refuses it "
    "(pinned: true, the default), or remove the pin (pinned: false).",
    scopes=SESSIONS,
    annotations=IDEMPOTENT_WRITE,
)
def session_pin(ctx: ToolContext[SessionService], args: PinSessionInput) -> SessionOutput:
    session = ctx.service.pin_session(
        ctx.principal,
        persona=args.persona,
        wallet=args.wallet_address,
        session_id=args.session_id,
        pinned=args.pinned,
    )
    return SessionOutput(
        session=session.summary(),
        model=ctx.service.model_for(
            ctx.principal, persona=args.persona, wallet=args.wallet_address
        ),
    )
