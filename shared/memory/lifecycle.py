"""Structured memory on the one memory record: write, query, retract, supersede, propose,
review, and the resolution of the curator's conflicts and duplicate clusters.

Every state change is one conditional write on the store (`transition` / `supersede` /
`FindingStore.settle`), so two reviewers or resolvers racing on one record see exactly one
win; the loser gets a `Conflict` (409) naming the state that won. The search index holds
active memories only: a memory leaves it when it is superseded or retracted and enters it only
once filed (a proposal on approval), which is how recall, memory_search and search honour the
lifecycle without knowing it.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, TypeVar

from shared.auth.principal import Principal
from shared.domain_events.emitter import DomainEvents
from shared.domain_events.models import Kind
from shared.memory.lifecycle_models import QueryStatus, ReviewOutcome
from shared.memory.models import (
    ACTIVE_STATUSES,
    REVIEW_SCOPE,
    EventAction,
    Finding,
    FindingResolution,
    Memory,
    MemoryEvent,
    MemoryKind,
    MemorySource,
    new_memory,
    new_memory_id,
)
from shared.memory.ports import (
    CurationQueue,
    FindingStore,
    MemoryIndex,
    MemoryStore,
    StateChanged,
)
from shared.storage.pages import BadCursor, decode_cursor, encode_cursor
from shared.tools.errors import Conflict, InvalidArgument, NotFound

T = TypeVar("T")

# How far down the hybrid ranking memory_query reads before filtering.
QUERY_DEPTH = 200
_WORD = re.compile(r"\w+")


def view_at(memory: Memory, known_at: datetime) -> Memory | None:
    """The record as the team knew it at `known_at` (transaction time), or None when it was
    not recorded yet. Its `status` and `valid_to` are replayed from the history; a record
    without history (written before the lifecycle existed) is taken as it is."""
    if memory.created_at > known_at:
        return None
    if not memory.history:
        return memory
    last: MemoryEvent | None = None
    for event in memory.history:
        if event.at <= known_at:
            last = event
    if last is None:
        return None
    return memory.model_copy(update={"status": last.status, "valid_to": last.valid_to})


def valid_at(memory: Memory, instant: datetime) -> bool:
    """Whether `instant` lies in the memory's valid time [valid_from, valid_to)."""
    return memory.valid_since <= instant and (memory.valid_to is None or instant < memory.valid_to)


def _aware(moment: datetime | None) -> datetime | None:
    if moment is not None and moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.casefold()) if len(w) > 2}


def _statuses(wanted: list[QueryStatus]) -> frozenset[str]:
    statuses: set[str] = set()
    for status in wanted or ["active"]:
        statuses |= ACTIVE_STATUSES if status == "active" else {status}
    return frozenset(statuses)


def _check_window(valid_from: datetime | None, valid_to: datetime | None) -> None:
    if valid_from is not None and valid_to is not None and valid_to <= valid_from:
        raise InvalidArgument(
            f"`valid_to` ({valid_to.isoformat()}) must be after `valid_from` "
            f"({valid_from.isoformat()}); give a later `valid_to` or leave it open",
            field="valid_to",
        )


@dataclass(eq=False)
class Lifecycle:
    """The advanced memory tools' logic (reached as `MemoryService.lifecycle`)."""

    store: MemoryStore
    index: MemoryIndex
    finding_store: FindingStore
    clock: Callable[[], float] = time.time
    detection: CurationQueue | None = None
    events: DomainEvents = field(default_factory=DomainEvents)

    def now(self) -> datetime:
        return datetime.fromtimestamp(self.clock(), tz=UTC)

    # ------------------------------------------------------------------ write / propose

    def write(self, principal: Principal, **claim: Any) -> Memory:
        """A filed structured memory, indexed and handed to conflict/duplicate detection."""
        memory = self._new(principal, "filed", "written", **claim)
        self.store.create(principal.team, memory)
        self._filed(principal.team, memory)
        return memory

    def propose(self, principal: Principal, **claim: Any) -> Memory:
        """A proposal: stored, never indexed, invisible to recall and search until approved."""
        memory = self._new(principal, "proposed", "proposed", **claim)
        awaiting = self.events.event(
            principal.team,
            Kind.MEMORY_PROPOSAL_AWAITING_REVIEW,
            principal.actor,
            memory_id=memory.id,
            memory_kind=memory.kind,
        )
        self.store.create(principal.team, memory, events=[awaiting])
        return memory

    def _new(
        self,
        principal: Principal,
        status: Literal["filed", "proposed"],
        action: EventAction,
        *,
        content: str,
        kind: MemoryKind,
        subject: str | None = None,
        title: str | None = None,
        tags: Sequence[str] = (),
        sources: Sequence[MemorySource] = (),
        confidence: float | None = None,
        valid_from: datetime | None = None,
        valid_to: datetime | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Memory:
        now = self.now()
        valid_from, valid_to = _aware(valid_from), _aware(valid_to)
        _check_window(valid_from or now, valid_to)
        return new_memory(
            principal.actor,
            now,
            title=title.strip() if title else None,
            content=content,
            subject=subject.strip() if subject else None,
            kind=kind,
            tags=list(tags),
            sources=list(sources),
            confidence=confidence,
            valid_from=valid_from,
            valid_to=valid_to,
            metadata=dict(metadata or {}),
            status=status,
            history=[
                MemoryEvent(
                    at=now, action=action, by=principal.actor, status=status, valid_to=valid_to
                )
            ],
        )

    def _filed(self, team: str, memory: Memory) -> None:
        self.index.index(team, memory)
        if self.detection is not None:
            self.detection.submit(team, memory.id)

    # ------------------------------------------------------------------ review

    def review(
        self,
        principal: Principal,
        *,
        ids: list[str],
        decision: Literal["approve", "reject"],
        note: str | None,
    ) -> list[ReviewOutcome]:
        """Approve (file) or reject each proposal; a proposal another reviewer decided first
        is reported `decided: false` with the status that won."""
        if REVIEW_SCOPE not in principal.effective_scopes:
            raise InvalidArgument(  # the gateway checks the scope; this guards direct calls
                "memory_review needs the `memory.review` scope", field="ids"
            )
        team = principal.team
        status: Literal["filed", "rejected"] = "filed" if decision == "approve" else "rejected"
        action: EventAction = "approved" if decision == "approve" else "rejected"
        results: list[ReviewOutcome] = []
        for memory_id in dict.fromkeys(ids):
            proposal = self.store.get(team, memory_id)
            if proposal is None:
                results.append(
                    ReviewOutcome(
                        id=memory_id,
                        decided=False,
                        status=None,
                        message="no such memory in your team",
                    )
                )
                continue
            if proposal.status != "proposed":
                results.append(_undecided(proposal))
                continue
            now = self.now()
            decided = proposal.model_copy(
                update={
                    "status": status,
                    "updated_at": now,
                    "history": [
                        *proposal.history,
                        MemoryEvent(
                            at=now,
                            action=action,
                            by=principal.actor,
                            status=status,
                            valid_to=proposal.valid_to,
                            note=note,
                        ),
                    ],
                }
            )
            try:
                self.store.transition(team, decided, frozenset({"proposed"}))
            except StateChanged as lost:
                current = lost.current if isinstance(lost.current, Memory) else None
                results.append(
                    _undecided(current)
                    if current
                    else ReviewOutcome(
                        id=memory_id, decided=False, status=None, message="deleted meanwhile"
                    )
                )
                continue
            if status == "filed":
                self._filed(team, decided)
            results.append(ReviewOutcome(id=memory_id, decided=True, status=status))
        return results

    # ------------------------------------------------------------------ retract / supersede

    def retract(self, principal: Principal, *, memory_id: str, reason: str) -> Memory:
        """Mark an active memory retracted: kept with its history, out of every listing."""
        team = principal.team
        stored = self.store.get(team, memory_id)
        if stored is not None and stored.status == "retracted":
            return stored  # retracting twice changes nothing
        memory = self._active(team, memory_id, "id")
        now = self.now()
        retracted = memory.model_copy(
            update={
                "status": "retracted",
                "updated_at": now,
                "history": [
                    *memory.history,
                    MemoryEvent(
                        at=now,
                        action="retracted",
                        by=principal.actor,
                        status="retracted",
                        valid_to=memory.valid_to,
                        note=reason,
                    ),
                ],
            }
        )
        try:
            self.store.transition(team, retracted, ACTIVE_STATUSES)
        except StateChanged as lost:
            raise _lost(memory_id, lost, "retract") from lost
        self.index.remove(team, memory_id)
        return retracted

    def supersede(
        self, principal: Principal, *, memory_id: str, content: str, **changes: Any
    ) -> tuple[Memory, Memory]:
        """Write a new version of an active memory: the old one's validity ends where the new
        one's begins, each links to the other. Returns (new, old)."""
        team = principal.team
        old = self._active(team, memory_id, "id")
        if old.wallet_address is not None:
            raise InvalidArgument(
                f"`id`: {memory_id!r} is an engram; change it with engram_update", field="id"
            )
        now = self.now()
        valid_from = _aware(changes.pop("valid_from", None)) or now
        valid_to = _aware(changes.pop("valid_to", None))
        _check_window(valid_from, valid_to)
        reason = changes.pop("reason", None)
        new_id = changes.pop("new_id", None) or new_memory_id()
        merged_from = changes.pop("merged_from", None) or []
        given = {k: v for k, v in changes.items() if v is not None}
        new = old.model_copy(
            update={
                "id": new_id,
                "content": content,
                **given,
                "tags": list(dict.fromkeys(given.get("tags", old.tags))),
                "valid_from": valid_from,
                "valid_to": valid_to,
                "created_at": now,
                "updated_at": now,
                "created_by": principal.actor,
                "status": "filed",
                "flags": [],
                "links": [],
                "merged_from": merged_from,
                "supersedes": old.id,
                "superseded_by": None,
                "history": [
                    MemoryEvent(
                        at=now,
                        action="written",
                        by=principal.actor,
                        status="filed",
                        valid_to=valid_to,
                        related=old.id,
                        note=reason,
                    )
                ],
            }
        )
        closed = self._close(old, new, principal.actor, now, reason)
        try:
            self.store.supersede(team, closed, ACTIVE_STATUSES, new)
        except StateChanged as lost:
            raise _lost(memory_id, lost, "supersede") from lost
        self.index.remove(team, old.id)
        self._filed(team, new)
        return new, closed

    def _close(
        self, old: Memory, new: Memory, actor: str, now: datetime, note: str | None
    ) -> Memory:
        """`old` superseded by `new`: its valid time ends where the new one's begins (never
        before its own start, never later than it already ended)."""
        end = max(old.valid_since, new.valid_since)
        if old.valid_to is not None:
            end = min(end, old.valid_to)
        return old.model_copy(
            update={
                "status": "superseded",
                "superseded_by": new.id,
                "valid_to": end,
                "updated_at": now,
                "history": [
                    *old.history,
                    MemoryEvent(
                        at=now,
                        action="superseded",
                        by=actor,
                        status="superseded",
                        valid_to=end,
                        related=new.id,
                        note=note,
                    ),
                ],
            }
        )

    # ------------------------------------------------------------------ query

    def query(
        self,
        principal: Principal,
        *,
        query: str | None,
        subject: str | None,
        kind: str | None,
        tags: list[str],
        created_by: str | None,
        status: list[QueryStatus],
        as_of: datetime | None,
        known_at: datetime | None,
        versions_of: str | None,
        limit: int,
        cursor: str | None,
        flagged: bool | None = None,
    ) -> tuple[list[Memory], str | None]:
        """Structured memories matching every filter, a page at a time (see docs/memory.md:
        default states, the as_of / known_at semantics, proposal visibility)."""
        team = principal.team
        as_of, known_at = _aware(as_of), _aware(known_at)
        statuses = _statuses(status)
        reviewer = REVIEW_SCOPE in principal.effective_scopes
        wanted_tags = set(tags)
        subject_key = _topic(subject) if subject else None
        now = self.now()

        def keep(memory: Memory) -> bool:
            if memory.wallet_address is not None or memory.is_expired(now):
                return False
            if memory.status == "rejected" and not (
                reviewer or memory.created_by == principal.actor
            ):
                return False  # a rejected proposal is its author's and the reviewers' business
            if subject_key is not None and _topic(memory.subject or "") != subject_key:
                return False
            if kind is not None and memory.kind != kind:
                return False
            if wanted_tags and not wanted_tags & set(memory.tags):
                return False
            if created_by is not None and memory.created_by != created_by:
                return False
            if flagged is not None and memory.flagged != flagged:
                return False
            return as_of is None or valid_at(memory, as_of)

        def state_ok(memory: Memory) -> bool:
            if memory.status in statuses:
                return True
            # A superseded version is still the truth for the window it was valid in.
            return as_of is not None and memory.status == "superseded" and not status

        records: Iterable[Memory]
        if versions_of is not None:
            records = self._chain(team, versions_of)
        else:
            records = self.store.iter_team(team)
        views: list[Memory] = []
        for record in records:
            view = view_at(record, known_at) if known_at is not None else record
            if view is None or not keep(view):
                continue
            if versions_of is None and not state_ok(view):
                continue
            views.append(view)

        if versions_of is not None:
            ordered = views  # oldest first along the chain
        elif query:
            ordered = self._ranked(team, query, views)
        else:
            ordered = sorted(views, key=lambda m: (m.created_at, m.id), reverse=True)
        return _offset_page(
            team,
            ordered,
            cursor,
            limit,
            "`cursor` is not one memory_query issued to your team; pass `next_cursor` "
            "from the previous page unchanged",
        )

    def _ranked(self, team: str, query: str, views: list[Memory]) -> list[Memory]:
        """Hybrid ranking for the active memories the index holds, then the others (outside
        the index: proposed, superseded, retracted, or not yet active at `known_at`) that
        contain every query word, newest first."""
        by_id = {m.id: m for m in views}
        ranked: list[Memory] = []
        for memory_id, _ in self.index.search(team, query, QUERY_DEPTH):
            hit = by_id.pop(memory_id, None)
            if hit is not None and hit.active:
                ranked.append(hit)
        needed = _words(query)
        rest = [
            m
            for m in by_id.values()
            if needed and needed <= _words(f"{m.subject or ''} {m.heading or ''} {m.content}")
        ]
        rest.sort(key=lambda m: (m.created_at, m.id), reverse=True)
        return ranked + rest

    def _chain(self, team: str, memory_id: str) -> list[Memory]:
        start = self.store.get(team, memory_id)
        if start is None:
            raise _no_memory(memory_id, "versions_of")
        first = start
        seen = {first.id}
        while first.supersedes and first.supersedes not in seen:
            previous = self.store.get(team, first.supersedes)
            if previous is None:
                break
            seen.add(previous.id)
            first = previous
        chain = [first]
        walked = {first.id}
        while chain[-1].superseded_by and chain[-1].superseded_by not in walked:
            following = self.store.get(team, chain[-1].superseded_by)
            if following is None:
                break
            walked.add(following.id)
            chain.append(following)
        return chain

    # ------------------------------------------------------------------ findings

    def findings(
        self,
        principal: Principal,
        *,
        kind: Literal["conflict", "duplicate"],
        status: str,
        limit: int,
        cursor: str | None,
    ) -> tuple[list[tuple[Finding, list[Memory]]], str | None]:
        """The team's findings of `kind`, newest first. An open finding one of whose members
        left the active states has settled itself and is not listed."""
        team = principal.team
        rows: list[tuple[Finding, list[Memory]]] = []
        for finding in self.finding_store.iter_team(team):
            if finding.kind != kind or (status != "all" and finding.status != status):
                continue
            members = [m for m in (self.store.get(team, i) for i in finding.members) if m]
            if finding.status == "open" and (
                len(members) != len(finding.members) or not all(m.active for m in members)
            ):
                continue
            rows.append((finding, members))
        rows.sort(key=lambda row: (row[0].detected_at, row[0].id), reverse=True)
        return _offset_page(
            team,
            rows,
            cursor,
            limit,
            "`cursor` is not one this listing issued to your team; pass `next_cursor` unchanged",
        )

    def resolve_conflict(
        self,
        principal: Principal,
        *,
        finding_id: str,
        action: Literal["keep", "merge", "both_valid"],
        keep_id: str | None,
        content: str | None,
        note: str | None,
    ) -> tuple[Finding, list[Memory]]:
        """Keep one (the other is superseded by it), merge both into a new version, or mark
        both valid (the pair is never reported again)."""
        team = principal.team
        finding, members = self._open_finding(team, finding_id, "conflict")
        if action == "keep":
            if keep_id not in finding.members:
                raise InvalidArgument(
                    f"`keep_id` must be one of the conflict's memories {finding.members} "
                    f"(got {keep_id!r})",
                    field="keep_id",
                )
        elif action == "merge" and content is None:
            raise InvalidArgument(
                "`content`: a merge writes the merged claim as a new version; give its text",
                field="content",
            )
        now = self.now()
        merged_id = new_memory_id() if action == "merge" else None
        settled = self._settle(
            team, finding, action, principal.actor, now, note, keep_id or merged_id
        )
        if action == "both_valid":
            return settled, members
        if action == "keep":
            kept = next(m for m in members if m.id == keep_id)
            results = [kept]
            for other in members:
                if other.id != kept.id:
                    results.append(
                        self._superseded_by(team, other, kept, principal.actor, now, note)
                    )
            return settled, results
        assert content is not None
        first, *rest = members
        merged, closed = self.supersede(
            principal,
            memory_id=first.id,
            content=content,
            reason=note or f"merged to resolve conflict {finding.id}",
            valid_from=min(m.valid_since for m in members),
            new_id=merged_id,
            merged_from=[m.id for m in members],
            sources=_union_sources(members),
            tags=list(dict.fromkeys(t for m in members for t in m.tags)),
        )
        results = [merged, closed]
        for other in rest:
            results.append(self._superseded_by(team, other, merged, principal.actor, now, note))
        return settled, results

    def resolve_duplicates(
        self,
        principal: Principal,
        *,
        finding_id: str,
        action: Literal["merge", "dismiss"],
        keep_id: str | None,
        note: str | None,
    ) -> tuple[Finding, list[Memory]]:
        """Merge the cluster into one member (tags, sources and scope united, the others
        superseded by it and named in its provenance), or dismiss it."""
        team = principal.team
        finding, members = self._open_finding(team, finding_id, "duplicate")
        if keep_id is not None and keep_id not in finding.members:
            raise InvalidArgument(
                f"`keep_id` must be one of the cluster's memories {finding.members} "
                f"(got {keep_id!r})",
                field="keep_id",
            )
        survivor = (
            next(m for m in members if m.id == keep_id)
            if keep_id
            else min(members, key=lambda m: (m.created_at, m.id))
        )
        now = self.now()
        settled = self._settle(
            team,
            finding,
            action,
            principal.actor,
            now,
            note,
            survivor.id if action == "merge" else None,
        )
        if action == "dismiss":
            return settled, members
        others = [m for m in members if m.id != survivor.id]
        merged = survivor.model_copy(
            update={
                "tags": list(dict.fromkeys(t for m in [survivor, *others] for t in m.tags)),
                "applies_to": list(
                    dict.fromkeys(a for m in [survivor, *others] for a in m.applies_to)
                ),
                "sources": _union_sources([survivor, *others])
                + [MemorySource(type="memory", ref=m.id) for m in others],
                "merged_from": list(
                    dict.fromkeys([*survivor.merged_from, *(m.id for m in others)])
                ),
                "updated_at": now,
                "history": [
                    *survivor.history,
                    MemoryEvent(
                        at=now,
                        action="merged",
                        by=principal.actor,
                        status=survivor.status,
                        valid_to=survivor.valid_to,
                        note=note,
                        related=finding.id,
                    ),
                ],
            }
        )
        try:
            self.store.transition(team, merged, ACTIVE_STATUSES)
        except StateChanged as lost:
            raise _lost(survivor.id, lost, "merge into") from lost
        self.index.index(team, merged)
        results = [merged]
        for other in others:
            results.append(self._superseded_by(team, other, merged, principal.actor, now, note))
        return settled, results

    def _open_finding(self, team: str, finding_id: str, kind: str) -> tuple[Finding, list[Memory]]:
        finding = self.finding_store.get(team, finding_id)
        if finding is None or finding.kind != kind:
            listing = "conflicts_list" if kind == "conflict" else "duplicates_list"
            raise NotFound(
                f"`id`: no {kind} {finding_id!r} in your team; use an id from {listing}",
                field="id",
            )
        if finding.status != "open":
            raise Conflict(
                f"`id`: {kind} {finding_id!r} is already {finding.status}",
                field="id",
                holder=finding.resolution.model_dump(mode="json") if finding.resolution else None,
            )
        members: list[Memory] = []
        for memory_id in finding.members:
            member = self.store.get(team, memory_id)
            if member is None or not member.active:
                raise Conflict(
                    f"`id`: memory {memory_id!r} of {kind} {finding_id!r} is no longer active "
                    f"({member.status if member else 'gone'}); the {kind} settled itself",
                    field="id",
                )
            members.append(member)
        return finding, members

    def _settle(
        self,
        team: str,
        finding: Finding,
        action: Literal["keep", "merge", "both_valid", "dismiss"],
        actor: str,
        now: datetime,
        note: str | None,
        result_id: str | None,
    ) -> Finding:
        # The finding is settled first, in one conditional write: of two resolvers racing,
        # exactly one goes on to change the memories.
        settled = finding.model_copy(
            update={
                "status": "dismissed" if action == "dismiss" else "resolved",
                "resolution": FindingResolution(
                    action=action, by=actor, at=now, note=note, result_id=result_id
                ),
            }
        )
        try:
            self.finding_store.settle(team, settled)
        except StateChanged as lost:
            current = lost.current if isinstance(lost.current, Finding) else None
            raise Conflict(
                f"`id`: {finding.kind} {finding.id!r} was settled by another call first",
                field="id",
                holder=current.resolution.model_dump(mode="json")
                if current and current.resolution
                else None,
            ) from lost
        return settled

    def _superseded_by(
        self, team: str, memory: Memory, by: Memory, actor: str, now: datetime, note: str | None
    ) -> Memory:
        closed = self._close(memory, by, actor, now, note)
        try:
            self.store.transition(team, closed, ACTIVE_STATUSES)
        except StateChanged as lost:
            raise _lost(memory.id, lost, "supersede") from lost
        self.index.remove(team, memory.id)
        return closed

    def _active(self, team: str, memory_id: str, field: str) -> Memory:
        memory = self.store.get(team, memory_id)
        if memory is None:
            raise _no_memory(memory_id, field)
        if not memory.active:
            raise Conflict(
                f"`{field}`: memory {memory_id!r} is {memory.status}, not active; only an "
                "active memory can change (see memory_query with `versions_of`)",
                field=field,
                holder={"status": memory.status, "superseded_by": memory.superseded_by},
            )
        return memory


def _topic(text: str) -> str:
    return " ".join(_WORD.findall(text.casefold().replace("_", " ")))


def _union_sources(memories: list[Memory]) -> list[MemorySource]:
    seen: dict[tuple[str, str], MemorySource] = {}
    for memory in memories:
        for source in memory.sources:
            seen.setdefault((source.type, source.ref), source)
    return list(seen.values())


def _undecided(memory: Memory) -> ReviewOutcome:
    return ReviewOutcome(
        id=memory.id,
        decided=False,
        status=memory.status,
        message=f"not an open proposal (it is {memory.status})",
    )


def _lost(memory_id: str, lost: StateChanged, verb: str) -> Conflict:
    current = lost.current if isinstance(lost.current, Memory) else None
    state = current.status if current else "gone"
    return Conflict(
        f"`id`: could not {verb} memory {memory_id!r}: it changed meanwhile and is now {state}",
        field="id",
        holder={"status": state},
    )


def _no_memory(memory_id: str, field: str) -> NotFound:
    return NotFound(
        f"`{field}`: no memory with id {memory_id!r} in your team; use an id from "
        "memory_query, memory_write or recall",
        field=field,
    )


def _offset_page(
    team: str, ordered: list[T], cursor: str | None, limit: int, refused: str
) -> tuple[list[T], str | None]:
    """`limit` of `ordered` from the offset `cursor` holds (the start without one), and the
    cursor of the next page (None on the last); `refused` is the `InvalidArgument` message for
    a cursor this listing did not issue to `team`."""
    try:
        start = int(decode_cursor(team, cursor)["o"]) if cursor else 0
    except (BadCursor, KeyError, TypeError, ValueError) as exc:
        raise InvalidArgument(refused, field="cursor") from exc
    end = start + limit
    return ordered[start:end], encode_cursor(team, {"o": end}) if end < len(ordered) else None
