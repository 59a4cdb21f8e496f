"""The session service: seed 004's persona sessions, memory, cleanup and model switch.

Every call is scoped to the token's team; a session belongs to one persona and one wallet, and
a session id given with another wallet or persona is as unknown as a made-up one.
"""

from __future__ import annotations

import difflib
import json
import re
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from shared.auth.principal import Principal
from shared.sessions.models import (
    MAX_REMEMBER_CHARS,
    CompactedSession,
    Message,
    ModelChoice,
    ModelInfo,
    Persona,
    Session,
)
from shared.sessions.ports import (
    CompactionLost,
    Engrams,
    ModelCatalog,
    NewEngram,
    SessionBusy,
    SessionOwner,
    SessionPinned,
    SessionStore,
    StoredEngram,
    UnknownSession,
)
from shared.tools.errors import Conflict, InvalidArgument, NotFound

KEEP_RECENT = 5
# How long a cleanup's claim on a session holds: a crashed cleanup's sessions are compacted by
# the next cleanup after this (never lost, at worst summarised twice).
COMPACTION_LEASE = timedelta(minutes=5)
# One cleanup compacts at most this many sessions (the oldest); the next call takes the rest.
MAX_COMPACTED = 100
# The summary engram stays well under the 100,000 characters an engram's content may have
# (engram_create / engram_update refuse more): the store would take more, but the engram could
# then not be rewritten through the tools.
SUMMARY_BUDGET_CHARS = 60_000
SUMMARY_EXCERPT_CHARS = 500
MAX_CANDIDATES = 10
# hecate_resume_session returns at most the newest 500 messages and 1,000,000 characters of
# them (`earlier_messages` says how many it left out).
RESUME_MESSAGES = 500
RESUME_CHARS = 1_000_000
_PAGE = 100


def new_session_id() -> str:
    return "ses_" + secrets.token_hex(12)


@dataclass(frozen=True)
class Cleanup:
    """What one cleanup did."""

    compacted: list[CompactedSession]
    kept: int
    summary: StoredEngram | None


@dataclass(frozen=True)
class ModelSwitch:
    """A switch made (`choice`), or the candidates of an ambiguous query (nothing changed)."""

    choice: ModelChoice | None
    candidates: list[ModelInfo]
    message: str


class SessionService:
    """Seed 004's hecate_* / moros_* tools over a `SessionStore`, the memory group's engrams
    and a model catalog."""

    def __init__(
        self,
        store: SessionStore,
        engrams: Engrams,
        catalog: Callable[[], ModelCatalog],
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._store = store
        self._engrams = engrams
        self._catalog = catalog  # built on first use: Bedrock is only asked by set_model
        self._clock = clock

    def now(self) -> datetime:
        return datetime.fromtimestamp(self._clock(), tz=UTC)

    # ------------------------------------------------------------------ sessions

    def new_session(self, principal: Principal, *, persona: Persona, wallet: str) -> Session:
        """A fresh, empty session: the persona's current conversation from now on."""
        session = _fresh(principal, persona, wallet, self.now())
        self._store.create(principal.team, session, [])
        return session

    def list_sessions(
        self, principal: Principal, *, persona: Persona, wallet: str, limit: int
    ) -> list[Session]:
        """The persona's sessions with the wallet, most recently updated first."""
        owner = SessionOwner(persona, wallet)
        return self._store.list_owner(principal.team, owner, limit=limit).items

    def resume(
        self, principal: Principal, *, persona: Persona, wallet: str, session_id: str
    ) -> tuple[Session, list[Message]]:
        """The session and its messages; it becomes the most recently updated."""
        self._owned(principal, persona, wallet, session_id)
        try:
            session = self._store.touch(principal.team, session_id, self.now())
        except UnknownSession as exc:
            raise _no_session(session_id, wallet) from exc
        # The newest messages, within what one tool result should carry.
        messages = self._store.messages(principal.team, session_id, last=RESUME_MESSAGES)
        kept, size = len(messages), 0
        while kept and size + len(messages[kept - 1].content) <= RESUME_CHARS:
            size += len(messages[kept - 1].content)
            kept -= 1
        return session, messages[kept:]

    def delete(
        self, principal: Principal, *, persona: Persona, wallet: str, session_id: str
    ) -> None:
        """Delete a session and its messages; a pinned one is refused, naming it."""
        self._owned(principal, persona, wallet, session_id)
        try:
            self._store.delete(principal.team, session_id)
        except UnknownSession as exc:
            raise _no_session(session_id, wallet) from exc
        except SessionPinned as exc:
            title = f" ({exc.session.title!r})" if exc.session.title else ""
            raise Conflict(
                f"`session_id`: session {session_id!r}{title} is pinned and cannot be deleted; "
                "unpin it with session_pin (pinned: false) first",
                field="session_id",
                holder={"session_id": session_id, "pinned": True},
            ) from exc

    def append(
        self,
        principal: Principal,
        *,
        persona: Persona,
        wallet: str,
        session_id: str | None,
        messages: list[tuple[str, str]],
    ) -> tuple[Session, list[Message]]:
        """Append messages to a session (a new one when `session_id` is None)."""
        now = self.now()
        if session_id is None:
            session, added = _fresh(principal, persona, wallet, now).appended(messages, now)
            self._store.create(principal.team, session, added)
            return session, added
        self._owned(principal, persona, wallet, session_id)
        try:
            return self._store.append(principal.team, session_id, messages, now)
        except UnknownSession as exc:
            raise _no_session(session_id, wallet) from exc
        except SessionBusy as exc:
            raise Conflict(
                f"`session_id`: session {session_id!r} is being written by other calls right "
                "now; nothing was appended: retry the call",
                field="session_id",
            ) from exc

    def pin_session(
        self,
        principal: Principal,
        *,
        persona: Persona,
        wallet: str,
        session_id: str,
        pinned: bool,
    ) -> Session:
        """Pin (cleanup keeps it, delete refuses it) or unpin a session; idempotent."""
        self._owned(principal, persona, wallet, session_id)
        try:
            return self._store.set_pinned(principal.team, session_id, pinned)
        except UnknownSession as exc:
            raise _no_session(session_id, wallet) from exc

    def _owned(
        self, principal: Principal, persona: Persona, wallet: str, session_id: str
    ) -> Session:
        session = self._store.get(principal.team, session_id)
        if session is None or session.persona != persona or session.wallet_address != wallet:
            raise _no_session(session_id, wallet)
        return session

    # ------------------------------------------------------------------ memory

    def remember(
        self, principal: Principal, *, wallet: str, key: str, content: str, engram_type: str
    ) -> tuple[StoredEngram, bool]:
        """Create or replace the wallet's engram under `key` (the same call twice: one engram).

        Engram content is JSON (seed 004); text that is not JSON is kept as a JSON string."""
        return self._engrams.put(
            principal, NewEngram(wallet, key, engram_type, content=_as_json(content))
        )

    def pin_engram(self, principal: Principal, *, engram_id: str, pinned: bool) -> StoredEngram:
        """Pin (engram_delete refuses it, cleanup keeps it) or unpin an engram; idempotent."""
        return self._engrams.set_pinned(principal, engram_id=engram_id, pinned=pinned)

    # ------------------------------------------------------------------ cleanup

    def cleanup(self, principal: Principal, *, persona: Persona, wallet: str) -> Cleanup:
        """Keep the `KEEP_RECENT` most recent and all pinned sessions; summarise the others
        into one knowledge engram for the wallet, then delete them.

        Each session is claimed first (one conditional write): of two cleanups racing, each
        session is summarised and deleted by exactly one. A session that changes after its
        claim (a message, a resume, a pin) is kept.
        """
        team = principal.team
        sessions = self._all(team, SessionOwner(persona, wallet))
        older = [s for s in sessions[KEEP_RECENT:] if not s.pinned]
        batch = older[::-1][:MAX_COMPACTED]  # the oldest first
        claimer = "cln_" + secrets.token_hex(8)
        now = self.now()
        won: list[Session] = []
        for session in batch:
            try:
                claimed = self._store.claim_for_compaction(
                    team, session.id, claimer, now, now + COMPACTION_LEASE
                )
            except CompactionLost:
                continue  # another cleanup has it, or it was pinned or deleted meanwhile
            if claimed.updated_at != session.updated_at:
                # Active since the listing: it may now be one of the most recent.
                self._store.release_compaction(team, session.id, claimer)
                continue
            won.append(claimed)
        if not won:
            return Cleanup(compacted=[], kept=len(sessions) - len(older), summary=None)
        transcripts = [(s, self._store.messages(team, s.id)) for s in won]
        content = _summary_text(persona, wallet, now, transcripts)
        while len(content) > SUMMARY_BUDGET_CHARS and len(transcripts) > 1:
            # Even cut to excerpts, these sessions do not fit one engram (escaped text can be
            # six times as long): compact the older half now, release the rest for the next
            # cleanup. Every session deleted is in the summary; one session always fits.
            half = len(transcripts) // 2
            for session, _ in transcripts[half:]:
                self._store.release_compaction(team, session.id, claimer)
            transcripts, won = transcripts[:half], won[:half]
            content = _summary_text(persona, wallet, now, transcripts)
        key = f"{persona}.sessions.summary.{now.strftime('%Y%m%dT%H%M%S')}.{claimer}"
        summary = self._engrams.create(
            principal,
            NewEngram(wallet, key, "knowledge", content, tags=(persona, "session-summary")),
        )
        compacted: list[CompactedSession] = []
        for session in won:
            if self._store.delete_compacted(team, session.id, claimer, session.updated_at):
                compacted.append(CompactedSession.model_validate(session, from_attributes=True))
            else:  # changed since it was summarised: it stays (the summary is an extra trace)
                self._store.release_compaction(team, session.id, claimer)
        return Cleanup(compacted=compacted, kept=len(sessions) - len(compacted), summary=summary)

    def _all(self, team: str, owner: SessionOwner) -> list[Session]:
        found: list[Session] = []
        cursor: str | None = None
        while True:
            page = self._store.list_owner(team, owner, limit=_PAGE, cursor=cursor)
            found += page.items
            if page.next_cursor is None:
                return found
            cursor = page.next_cursor

    # ------------------------------------------------------------------ models

    def model_for(
        self, principal: Principal, *, persona: Persona, wallet: str
    ) -> ModelChoice | None:
        """The persona's model for the wallet: the wallet's own choice, else the team's."""
        return self._store.get_model(principal.team, persona, wallet) or self._store.get_model(
            principal.team, persona, None
        )

    def set_model(
        self, principal: Principal, *, persona: Persona, query: str, wallet: str | None
    ) -> ModelSwitch:
        """Switch the persona's model (for `wallet`, else the team) to the one `query` names.

        An ambiguous query changes nothing and returns the candidates; an unknown one is a
        `NotFound` naming `query` and listing the closest names."""
        models = self._catalog().models()
        chosen, candidates = resolve_model(query, models)
        if chosen is None and candidates:
            shown = candidates[:MAX_CANDIDATES]
            return ModelSwitch(
                choice=None,
                candidates=shown,
                message=f"`query` {query!r} matches {len(candidates)} models; nothing was "
                f"switched. Ask again with one of: {', '.join(m.id for m in shown)}",
            )
        if chosen is None:
            closest = closest_models(query, models)
            raise NotFound(
                f"`query`: no model matches {query!r}; the closest are: "
                f"{', '.join(closest) if closest else '(the catalog is empty)'}",
                field="query",
            )
        choice = ModelChoice(
            persona=persona,
            wallet_address=wallet,
            model=chosen,
            chosen_by=principal.actor,
            chosen_at=self.now(),
        )
        self._store.put_model(principal.team, choice)
        scope = f"wallet {wallet!r}" if wallet else "the team"
        return ModelSwitch(
            choice=choice,
            candidates=[],
            message=f"{persona} now uses {chosen.name} ({chosen.id}) for {scope}",
        )


# --------------------------------------------------------------------------- helpers


def _fresh(principal: Principal, persona: Persona, wallet: str, now: datetime) -> Session:
    """A new, empty session of `persona` with `wallet`, created by the caller at `now`."""
    return Session(
        id=new_session_id(),
        persona=persona,
        wallet_address=wallet,
        created_at=now,
        updated_at=now,
        created_by=principal.actor,
    )


def _no_session(session_id: str, wallet: str) -> NotFound:
    return NotFound(
        f"`session_id`: no session {session_id!r} of this persona for wallet {wallet!r} in "
        "your team; list them with hecate_list_sessions",
        field="session_id",
    )


def _as_json(content: str) -> str:
    """`content` when it is JSON, else the text as a JSON string (no longer than an engram's
    content may be: quotes and control characters grow when escaped)."""
    try:
        json.loads(content)
    except ValueError:
        encoded = json.dumps(content, ensure_ascii=False)
        if len(encoded) > MAX_REMEMBER_CHARS:
            raise InvalidArgument(
                f"`content` is {len(encoded)} characters once stored as a JSON string (quotes, "
                f"backslashes and control characters are escaped); at most {MAX_REMEMBER_CHARS}",
                field="content",
            ) from None
        return encoded
    return content


def _normal(text: str) -> str:
    return re.sub(r"[^a-z0-9.]+", "-", text.casefold()).strip("-")


def _words(text: str) -> list[str]:
    return [w for w in re.split(r"[^a-z0-9.]+", text.casefold()) if w]


def resolve_model(query: str, models: list[ModelInfo]) -> tuple[ModelInfo | None, list[ModelInfo]]:
    """The model `query` names, or (None, candidates) when it names several (or none).

    An exact id, name or alias wins; otherwise every model whose id, name or aliases hold all
    the query's words is a candidate, and exactly one candidate is the match.

    >>> resolve_model("opus", catalog)  # doctest: +SKIP
    (ModelInfo(id='claude-opus-4-5', ...), [])
    """
    wanted = _normal(query)
    if not wanted:
        raise InvalidArgument("`query` must name a model (letters or digits)", field="query")
    exact = [
        m
        for m in models
        if wanted in {_normal(m.id), _normal(m.name), *(_normal(a) for a in m.aliases)}
    ]
    if len(exact) == 1:
        return exact[0], []
    if exact:
        return None, exact
    words = _words(query)
    candidates = [
        m
        for m in models
        if all(
            word in " ".join([_normal(m.id), _normal(m.name), *map(_normal, m.aliases)])
            for word in words
        )
    ]
    if len(candidates) == 1:
        return candidates[0], []
    return None, candidates


def closest_models(query: str, models: list[ModelInfo], n: int = 5) -> list[str]:
    """The ids of the `n` models whose id, name or alias is most like `query`."""
    wanted = _normal(query)

    def likeness(model: ModelInfo) -> float:
        return max(
            difflib.SequenceMatcher(None, wanted, _normal(text)).ratio()
            for text in (model.id, model.name, *model.aliases)
        )

    ranked = sorted(models, key=lambda m: (-likeness(m), m.id))
    return [m.id for m in ranked[:n]]


def _json(content: dict[str, Any]) -> str:
    # Non-ASCII text as is: escaped, an emoji takes 12 characters of the engram's budget.
    return json.dumps(content, ensure_ascii=False)


def _summary_text(
    persona: str, wallet: str, now: datetime, transcripts: list[tuple[Session, list[Message]]]
) -> str:
    return _json(_summary(persona, wallet, now, transcripts))


def _summary(
    persona: str, wallet: str, now: datetime, transcripts: list[tuple[Session, list[Message]]]
) -> dict[str, Any]:
    """The summary engram's content: each compacted session's title, times, counts and what
    the user said (each message cut to an excerpt, shorter while the whole is over budget)."""
    excerpt = SUMMARY_EXCERPT_CHARS
    while True:
        sessions: list[dict[str, Any]] = [
            {
                "id": session.id,
                "title": session.title,
                "created_at": session.created_at.isoformat(),
                "updated_at": session.updated_at.isoformat(),
                "message_count": session.message_count,
                "user_said": [
                    m.content if len(m.content) <= excerpt else m.content[: excerpt - 1] + "…"
                    for m in messages
                    if m.role == "user"
                ],
            }
            for session, messages in transcripts
        ]
        content: dict[str, Any] = {
            "kind": "session-summary",
            "persona": persona,
            "wallet_address": wallet,
            "compacted_at": now.isoformat(),
            "sessions": sessions,
        }
        if len(_json(content)) <= SUMMARY_BUDGET_CHARS or excerpt <= 20:
            break
        excerpt //= 2
    if len(_json(content)) > SUMMARY_BUDGET_CHARS:
        # Very long sessions: each keeps its first and last words and the count between (if
        # even that is over budget, cleanup compacts fewer sessions at once).
        for entry in sessions:
            said = entry["user_said"]
            if len(said) > 2:
                entry["user_said"] = [said[0], f"… {len(said) - 2} more messages …", said[-1]]
    return content
