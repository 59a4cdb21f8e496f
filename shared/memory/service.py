"""The memory service: put, get, search and prune, always within one team."""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import KW_ONLY, dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from shared.auth.principal import Principal
from shared.domain_events.emitter import DomainEvents
from shared.memory.models import (
    ACTIVE_STATUSES,
    MAX_FLAGS,
    REVIEW_SCOPE,
    EngramType,
    Memory,
    MemoryFlag,
    MemorySearchHit,
    new_memory,
)
from shared.memory.ports import (
    CurationQueue,
    FindingStore,
    KeyTaken,
    MemoryGone,
    MemoryIndex,
    MemoryPinned,
    MemoryStore,
    StateChanged,
)
from shared.tools.errors import Conflict, InvalidArgument, NotFound

if TYPE_CHECKING:
    from shared.memory.lifecycle import Lifecycle

# How far down the ranking `recall` reads to fill a page after tag filtering and demotion.
RECALL_DEPTH = 200
# A flagged memory's relevance is multiplied by this in `recall`: an exact match flagged as
# wrong still outranks weak matches (relevance < 0.5) but falls below other strong ones.
FLAG_DEMOTION = 0.5
# Seed 004: a profile field `f` is the persona engram `user.profile.f`.
PROFILE_PREFIX = "user.profile."


def _require_json(content: str) -> None:
    """Seed 004: engram content is a JSON string."""
    try:
        json.loads(content)
    except ValueError as exc:
        raise InvalidArgument(
            f"`content` must be a JSON string (JSON parse error: {exc}); encode the value as "
            """JSON text, e.g. '{"theme": "dark"}' or '"plain text"'""",
            field="content",
        ) from exc


@dataclass(eq=False)
class MemoryService:
    """One memory model behind every surface: seed 000's memory_put / memory_get /
    memory_search and seed 002's remember / recall / flag_memory."""

    store: MemoryStore
    index: MemoryIndex
    clock: Callable[[], float] = time.time
    curation: CurationQueue | None = None
    _: KW_ONLY
    findings: FindingStore
    detection: CurationQueue | None = None
    events: DomainEvents = field(default_factory=DomainEvents)

    @functools.cached_property
    def lifecycle(self) -> Lifecycle:
        """Seed 000's advanced memory tools, on the same store and index. Built (and its module
        imported) at the first such call: a cold start serving other tools skips it."""
        from shared.memory.lifecycle import Lifecycle

        return Lifecycle(
            self.store,
            self.index,
            self.findings,
            clock=self.clock,
            detection=self.detection,
            events=self.events,
        )

    def now(self) -> datetime:
        return datetime.fromtimestamp(self.clock(), tz=UTC)

    def put(
        self,
        principal: Principal,
        *,
        key: str,
        content: str,
        tags: list[str],
        metadata: dict[str, Any],
        ttl_days: int | None,
        expires_at: datetime | None,
    ) -> Memory:
        """Create or replace the memory stored under `key` in the caller's team."""
        now = self.now()
        if ttl_days is not None and expires_at is not None:
            raise InvalidArgument(
                "`expires_at`: give either `ttl_days` or `expires_at`, not both; drop one of them",
                field="expires_at",
            )
        if expires_at is not None:
            if expires_at.tzinfo is None:
                expires_at = expires_at.replace(tzinfo=UTC)
            if expires_at <= now:
                raise InvalidArgument(
                    f"`expires_at` must be in the future (got {expires_at.isoformat()}); give "
                    "a later time, or `ttl_days`",
                    field="expires_at",
                )
        elif ttl_days is not None:
            expires_at = now + timedelta(days=ttl_days)
        team = principal.team
        for _ in range(3):
            existing = self._live_by_key(team, key)
            if existing is not None:
                memory = existing.model_copy(
                    update={
                        "content": content,
                        "tags": list(dict.fromkeys(tags)),
                        "metadata": metadata,
                        "updated_at": now,
                        "expires_at": expires_at,
                    }
                )
                try:
                    # Conditional on the memory still being active: a retraction or supersession
                    # that landed since the read is never undone by this write.
                    self.store.transition(team, memory, ACTIVE_STATUSES)
                except StateChanged as exc:
                    if exc.current is None:
                        # The record is gone (a raced delete, or TTL collecting the record
                        # before its alias): the alias's copy is all that was left of it, and
                        # would answer every read of the key. Free the key, then create it.
                        self.store.drop_alias(team, key, None, existing.id)
                    continue  # deleted or retired meanwhile: create the key afresh
                self.index.index(team, memory)
                self._detect(team, memory)
                return memory
            memory = new_memory(
                principal.actor,
                now,
                key=key,
                content=content,
                tags=tags,
                metadata=metadata,
                expires_at=expires_at,
            )
            try:
                self.store.create(team, memory)
            except KeyTaken:
                continue  # another writer created the key first: update theirs instead
            self.index.index(team, memory)
            self._detect(team, memory)
            return memory
        raise InvalidArgument(
            f"`key` {key!r} is being written concurrently; retry the call", field="key"
        )

    def get(self, principal: Principal, *, memory_id: str | None, key: str | None) -> Memory | None:
        """The live memory by id or key, else None. Expired memories are pruned on sight."""
        if memory_id is None and key is None:
            raise InvalidArgument(
                "`key`: give `id` or `key` of the memory to read; memory_put and "
                "memory_search return both",
                field="key",
            )
        team = principal.team
        if memory_id is not None:
            memory = self._live(team, self.store.get(team, memory_id))
            if memory is not None and key is not None and memory.key != key:
                return None
            # By id a superseded or retracted version still reads (with its status and links:
            # it is history); a rejected proposal only for its author and reviewers.
            if memory is not None and not _may_see(principal, memory):
                return None
            return memory
        assert key is not None
        return self._live_by_key(team, key)

    def search(self, principal: Principal, *, query: str, limit: int) -> list[MemorySearchHit]:
        """Memories of the caller's team ranked by relevance to `query`; expired ones never."""
        team = principal.team
        hits: list[MemorySearchHit] = []
        ranked = self.index.search(team, query, limit * 2 + 10)
        # One batch read of every candidate, not a read per hit.
        stored = self.store.get_many(team, [memory_id for memory_id, _ in ranked])
        for memory_id, score in ranked:
            memory = self._live(team, stored.get(memory_id))
            if memory is None or not memory.active:
                continue
            hits.append(MemorySearchHit.model_validate({**dict(memory), "score": score}))
            if len(hits) == limit:
                break
        return hits

    def remember(
        self,
        principal: Principal,
        *,
        title: str,
        body: str,
        tags: list[str],
        applies_to: list[str],
        confidence: str | None,
    ) -> Memory:
        """Store a memory as `pending` and hand it to the curator (dedupe, merge, link)."""
        now = self.now()
        memory = new_memory(
            principal.actor,
            now,
            title=title.strip(),
            content=body,
            tags=tags,
            applies_to=list(dict.fromkeys(applies_to)),
            confidence=confidence,
            status="pending",
        )
        self.store.create(principal.team, memory)
        self.index.index(principal.team, memory)
        if self.curation is not None:
            self.curation.submit(principal.team, memory.id)
        return memory

    def recall(
        self, principal: Principal, *, query: str | None, tags: list[str], limit: int
    ) -> list[Memory]:
        """Live memories by relevance to `query` (newest first without one), carrying any of
        `tags` when given.

        With a query, only memories the index finds relevant are candidates (it drops those
        with no lexical or semantic evidence), and a flagged memory's relevance is multiplied
        by `FLAG_DEMOTION`: it moves down among the relevant ones, never below unrelated ones
        (which are not returned at all). Without a query, flagged memories come last."""
        team = principal.team
        wanted = set(tags)
        if query:
            ranked: list[tuple[float, int, Memory]] = []
            unflagged = 0
            # Records are read in relevance order only until the page has `limit` unflagged
            # matches: a flagged one found later would rank below them anyway.
            for position, (memory_id, score) in enumerate(
                self.index.search(team, query, RECALL_DEPTH)
            ):
                memory = self._live(team, self.store.get(team, memory_id))
                if (
                    memory is None
                    or not memory.active
                    or (wanted and not wanted & set(memory.tags))
                ):
                    continue
                demoted = score * FLAG_DEMOTION if memory.flagged else score
                ranked.append((demoted, position, memory))
                unflagged += not memory.flagged
                if unflagged == limit:
                    break
            ranked.sort(key=lambda entry: (-entry[0], entry[1]))
            return [memory for _, _, memory in ranked[:limit]]
        now = self.now()
        candidates: Iterator[Memory] = (
            m for m in self.store.iter_recent(team) if not m.is_expired(now) and m.active
        )
        recent: list[Memory] = []
        flagged: list[Memory] = []
        for memory in candidates:
            if wanted and not wanted & set(memory.tags):
                continue
            (flagged if memory.flagged else recent).append(memory)
            if len(recent) == limit:
                break
        return (recent + flagged)[:limit]

    def flag(self, principal: Principal, *, memory_id: str, reason: str) -> Memory:
        """Record why a memory is wrong; it is demoted in recall and awaits human review."""
        team = principal.team
        live = self._live(team, self.store.get(team, memory_id))
        if live is None or not live.active:
            raise _no_memory(memory_id)
        flag = MemoryFlag(agent_id=principal.actor, reason=reason, flagged_at=self.now())
        if any(flag.repeats(earlier) for earlier in live.flags):
            return live  # said already: a repeated flag counts once
        if len(live.flags) >= MAX_FLAGS:
            raise InvalidArgument(
                f"`memory_id`: memory {memory_id!r} already has {MAX_FLAGS} flags awaiting "
                "review; wait for a reviewer to resolve them before flagging it again",
                field="memory_id",
            )
        flagged = self.store.add_flag(team, memory_id, flag)
        if flagged is None:  # deleted between the read and the write
            raise _no_memory(memory_id)
        return flagged

    # ------------------------------------------------------------------ seed 004 engrams

    def engram_create(
        self,
        principal: Principal,
        *,
        wallet_address: str,
        engram_type: EngramType,
        key: str,
        content: str,
        tags: list[str],
        is_public: bool,
    ) -> Memory:
        """A new engram; `Conflict` (409) when the wallet already has one under `key`."""
        _require_json(content)
        now = self.now()
        memory = new_memory(
            principal.actor,
            now,
            key=key,
            content=content,
            tags=tags,
            wallet_address=wallet_address,
            engram_type=engram_type,
            is_public=is_public,
        )
        try:
            self.store.create(principal.team, memory)
        except KeyTaken as exc:
            existing = self.store.id_for_key(principal.team, key, wallet_address)
            raise Conflict(
                f"`key`: wallet {wallet_address!r} already has an engram under `key` {key!r} "
                f"({existing}); use engram_update on that id, or pick another key",
                field="key",
                holder={"id": existing} if existing else None,
            ) from exc
        self.index.index(principal.team, memory)
        return memory

    def engram_get(self, principal: Principal, *, wallet_address: str, key: str) -> Memory | None:
        return self._live_by_key(principal.team, key, wallet_address)

    def engrams(
        self,
        principal: Principal,
        *,
        wallet_address: str | None,
        engram_type: str | None,
        tags: list[str],
        query: str | None = None,
    ) -> list[Memory]:
        """The team's engrams matching every filter given, most recently updated first."""
        now = self.now()
        wanted = set(tags)
        needle = query.casefold() if query else None
        found = [
            m
            for m in self.store.iter_team(principal.team)
            if m.wallet_address is not None
            and not m.is_expired(now)
            and m.active
            and (wallet_address is None or m.wallet_address == wallet_address)
            and (engram_type is None or m.engram_type == engram_type)
            and (not wanted or wanted & set(m.tags))
            and (needle is None or needle in f"{m.key}\n{m.content}".casefold())
        ]
        return sorted(found, key=lambda m: (m.updated_at, m.id), reverse=True)

    def engram_update(
        self, principal: Principal, *, engram_id: str, content: str, tags: list[str] | None
    ) -> Memory:
        _require_json(content)
        engram = self._engram(principal.team, engram_id)
        updated = engram.model_copy(
            update={
                "content": content,
                "tags": list(dict.fromkeys(tags)) if tags is not None else engram.tags,
                "updated_at": self.now(),
            }
        )
        try:
            # The store keeps the stored pin (a pin landing since the read is not undone) and
            # returns the record as written, pin included.
            written = self.store.transition(principal.team, updated, ACTIVE_STATUSES)
        except StateChanged as exc:  # deleted or retracted meanwhile
            raise _no_engram(engram_id) from exc
        self.index.index(principal.team, written)
        return written

    def engram_delete(self, principal: Principal, *, engram_id: str) -> None:
        """Delete an engram; `Conflict` (409) naming it while it is pinned (checked by the
        store in the delete's own atomic step, so a pin landing meanwhile is never lost)."""
        engram = self._engram(principal.team, engram_id)
        pinned = Conflict(
            f"`id`: engram {engram_id!r} ({engram.key!r} of wallet {engram.wallet_address!r})"
            " is pinned and cannot be deleted; unpin it first with hecate_unpin_engram or "
            "moros_unpin_engram",
            field="id",
            holder={"id": engram_id, "pinned": True},
        )
        if engram.pinned:
            raise pinned
        try:
            self.store.delete(principal.team, engram, unless_pinned=True)
        except MemoryPinned as exc:
            raise pinned from exc
        self.index.remove(principal.team, engram.id)

    def engram_set_pinned(self, principal: Principal, *, engram_id: str, pinned: bool) -> Memory:
        """Pin (protect from engram_delete and cleanup) or unpin an engram; idempotent."""
        engram = self._engram(principal.team, engram_id)
        if engram.pinned == pinned:
            return engram
        try:
            # The pin field alone (record and key alias together): content written since the
            # read above is kept.
            return self.store.set_pinned(principal.team, engram_id, pinned)
        except MemoryGone as exc:
            raise _no_engram(engram_id) from exc

    def profile(self, principal: Principal, *, wallet_address: str) -> list[Memory]:
        """The wallet's profile fields: its persona engrams keyed `user.profile.*`, by key."""
        persona = self.engrams(
            principal, wallet_address=wallet_address, engram_type="persona", tags=[]
        )
        fields = [m for m in persona if m.key and m.key.startswith(PROFILE_PREFIX)]
        return sorted(fields, key=lambda m: m.key or "")

    def profile_update(
        self, principal: Principal, *, wallet_address: str, field: str, content: str
    ) -> Memory:
        """Create or replace the persona engram `user.profile.<field>` (idempotent)."""
        key = f"{PROFILE_PREFIX}{field}"
        for _ in range(3):
            existing = self.engram_get(principal, wallet_address=wallet_address, key=key)
            if existing is not None:
                return self.engram_update(
                    principal, engram_id=existing.id, content=content, tags=None
                )
            try:
                return self.engram_create(
                    principal,
                    wallet_address=wallet_address,
                    engram_type="persona",
                    key=key,
                    content=content,
                    tags=[],
                    is_public=False,
                )
            except Conflict:
                continue  # created concurrently: update it instead
        raise InvalidArgument(
            f"`field` {field!r} is being written concurrently; retry the call", field="field"
        )

    def _engram(self, team: str, engram_id: str) -> Memory:
        memory = self._live(team, self.store.get(team, engram_id))
        if memory is None or memory.wallet_address is None or not memory.active:
            raise _no_engram(engram_id)
        return memory

    def prune_expired(self, team: str) -> int:
        """Delete the team's expired memories; returns how many went."""
        now = self.now()
        pruned = 0
        for memory in list(self.store.iter_team(team)):
            if memory.is_expired(now):
                self._delete(team, memory)
                pruned += 1
        return pruned

    def _detect(self, team: str, memory: Memory) -> None:
        """Hand a written memory to conflict/duplicate detection, as the memories table's
        stream does in AWS (an expiring memory is scratch: never examined)."""
        if self.detection is not None and memory.expires_at is None:
            self.detection.submit(team, memory.id)

    def _live_by_key(self, team: str, key: str, wallet: str | None = None) -> Memory | None:
        # One read: the store keeps the key and its memory's record together.
        memory = self.store.get_by_key(team, key, wallet)
        if memory is None:
            return None
        if not memory.active:
            # A key names its active version only; a key created with an inactive memory (a
            # proposal) frees itself on sight.
            self.store.drop_alias(team, key, wallet, memory.id)
            return None
        return self._live(team, memory)

    def _live(self, team: str, memory: Memory | None) -> Memory | None:
        # DynamoDB TTL deletes lazily (hours to days): expiry is decided here, at read time.
        if memory is not None and memory.is_expired(self.now()):
            self._delete(team, memory)
            return None
        return memory

    def _delete(self, team: str, memory: Memory) -> None:
        self.store.delete(team, memory)
        self.index.remove(team, memory.id)


def _no_memory(memory_id: str) -> NotFound:
    return NotFound(
        f"`memory_id`: no memory with id {memory_id!r} in your team; use an id from "
        "recall or memory_search",
        field="memory_id",
    )


def _no_engram(engram_id: str) -> NotFound:
    return NotFound(
        f"`id`: no engram with id {engram_id!r} in your team; use an id from engram_create, "
        "engram_search or engram_list_by_type",
        field="id",
    )


def _may_see(principal: Principal, memory: Memory) -> bool:
    """An open proposal is the team's to read when asked for (it is what the review queue
    shows every reader); a rejected one stays its author's and the reviewers' business."""
    if memory.status != "rejected":
        return True
    return memory.created_by == principal.actor or REVIEW_SCOPE in principal.effective_scopes
