"""The curator: files a remembered memory — dedupe, merge, link (seed 002's `remember`).

It runs once per `pending` memory: locally and in tests right after `remember`
(`InlineCuration`), in AWS from the memories table's stream (`functions/curator`). It is
idempotent — a memory that is no longer pending is left alone — so a redelivered stream record
does nothing twice.

- **Dedupe / merge:** a candidate with the same normalised body, or whose embedding is at least
  `DUPLICATE_SIMILARITY` (cosine) from the new memory's while it makes the same claims
  (`detection.same_claims`: no negation, antonym, number or identifier on one side only),
  absorbs it: tags and scope hints are united, `merged_from` records the new id, and the new
  record is deleted.
- **Link:** otherwise the memory is filed with `links` to up to `MAX_LINKS` candidates at least
  `LINK_SIMILARITY` alike.

Candidates are the team's best hybrid matches for the new memory's title and body, among the
memories `remember` wrote (never a keyed memory, an engram or an expiring one). The
similarity thresholds are cosine values of the search engine's embedder (all-MiniLM-L6-v2
locally, Titan v2 in AWS); docs/memory.md says how they were chosen.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

from shared.memory.detection import same_claims, spelling
from shared.memory.models import ACTIVE_STATUSES, Memory
from shared.memory.ports import (
    CurationQueue,
    MemoryIndex,
    MemorySimilarity,
    MemoryStore,
    StateChanged,
)

DUPLICATE_SIMILARITY = 0.95
LINK_SIMILARITY = 0.5
MAX_LINKS = 3
CANDIDATES = 8


@dataclass(frozen=True)
class CurationOutcome:
    """What the curator did with one memory."""

    memory_id: str
    action: Literal["filed", "merged", "skipped"]
    into: str | None = None
    links: tuple[str, ...] = field(default_factory=tuple)


def _normal(text: str) -> str:
    # Two bodies that differ only in case, punctuation or separators are one memory.
    return spelling(text)


def _curated_kind(memory: Memory) -> bool:
    """Only memories `remember` wrote are merged or linked: a keyed memory (memory_put), an
    engram or an expiring memory has its own owner and lifecycle and is never absorbed."""
    return memory.key is None and memory.wallet_address is None and memory.expires_at is None


def _text(memory: Memory) -> str:
    return f"{memory.heading}\n\n{memory.content}" if memory.heading else memory.content


@dataclass(eq=False)
class Curator:
    """Files pending memories of a team: merge into a duplicate, or file with links."""

    store: MemoryStore
    index: MemoryIndex
    similarity: MemorySimilarity
    clock: Callable[[], float] = time.time

    def file(self, team: str, memory_id: str) -> CurationOutcome:
        """Curate one memory (no-op unless it exists and is pending)."""
        now = datetime.fromtimestamp(self.clock(), tz=UTC)
        memory = self.store.get(team, memory_id)
        if memory is None or memory.status != "pending" or memory.is_expired(now):
            return CurationOutcome(memory_id, "skipped")
        candidates = self._candidates(team, memory, now)
        scores = (
            self.similarity.similarities(_text(memory), [_text(c) for c in candidates])
            if candidates
            else []
        )
        ranked = sorted(zip(scores, candidates, strict=True), key=lambda p: p[0], reverse=True)
        body = _normal(memory.content)
        duplicate = next((c for c in candidates if _normal(c.content) == body), None)
        if duplicate is None:
            duplicate = next(
                (
                    c
                    for score, c in ranked
                    if score >= DUPLICATE_SIMILARITY and same_claims(_text(memory), _text(c))
                ),
                None,
            )
        if duplicate is not None:
            try:
                self._merge(team, memory, duplicate, now)
                return CurationOutcome(memory_id, "merged", into=duplicate.id)
            except StateChanged:
                pass  # the duplicate was deleted or retired meanwhile: file this one alone
        links = [c.id for score, c in ranked if score >= LINK_SIMILARITY][:MAX_LINKS]
        try:
            self.store.transition(
                team,
                memory.model_copy(update={"status": "filed", "links": links}),
                frozenset({"pending"}),
            )
        except StateChanged:
            return CurationOutcome(memory_id, "skipped")  # deleted or retracted meanwhile
        return CurationOutcome(memory_id, "filed", links=tuple(links))

    def _candidates(self, team: str, memory: Memory, now: datetime) -> list[Memory]:
        found: list[Memory] = []
        for candidate_id, _ in self.index.search(team, _text(memory), CANDIDATES + 1):
            if candidate_id == memory.id:
                continue
            candidate = self.store.get(team, candidate_id)
            if (
                candidate is not None
                and candidate.active
                and _curated_kind(candidate)
                and not candidate.is_expired(now)
            ):
                found.append(candidate)
        return found[:CANDIDATES]

    def _merge(self, team: str, memory: Memory, into: Memory, now: datetime) -> None:
        merged = into.model_copy(
            update={
                "tags": list(dict.fromkeys([*into.tags, *memory.tags])),
                "applies_to": list(dict.fromkeys([*into.applies_to, *memory.applies_to])),
                "confidence": into.confidence or memory.confidence,
                "merged_from": [*into.merged_from, memory.id],
                "updated_at": now,
            }
        )
        self.store.transition(team, merged, ACTIVE_STATUSES)
        self.index.index(team, merged)
        self.store.delete(team, memory)
        self.index.remove(team, memory.id)


class InlineCuration:
    """`CurationQueue` that curates at once, in the caller's thread (local mode and tests);
    a memory it files goes on to conflict and duplicate detection (`detection`)."""

    def __init__(self, curator: Curator, detection: CurationQueue | None = None) -> None:
        self._curator = curator
        self._detection = detection

    def submit(self, team: str, memory_id: str) -> None:
        outcome = self._curator.file(team, memory_id)
        if self._detection is not None and outcome.action == "filed":
            self._detection.submit(team, memory_id)
