"""What the memory service needs from storage and from search."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol

from shared.domain_events.models import DomainEvent
from shared.memory.models import Finding, Memory, MemoryFlag


class MemoryStore(Protocol):
    """Source of truth for memories, always scoped by team.

    A memory with an `expires_at` in the past is gone for `get` and `id_for_key` (whether or
    not the backend has collected it yet); `iter_team` still yields it, so its owner can prune
    it from the search index too.
    """

    def get(self, team: str, memory_id: str) -> Memory | None:
        """The memory, unless it does not exist or has expired."""
        ...

    def get_many(self, team: str, memory_ids: Sequence[str]) -> dict[str, Memory]:
        """The memories of `memory_ids` that `get` would return, by id, in one batch read
        (ids that do not exist, have expired or are another team's are left out)."""
        ...

    def id_for_key(self, team: str, key: str, wallet: str | None = None) -> str | None:
        """The memory under `key` (an engram's key when `wallet` is given); None once expired."""
        ...

    def get_by_key(self, team: str, key: str, wallet: str | None = None) -> Memory | None:
        """The memory `key` names (an engram's key when `wallet` is given), in one read: the
        key and the record are kept together by every write. None when the key is free or its
        memory has expired; an inactive memory is returned as stored (the caller frees its key)."""
        ...

    def create(self, team: str, memory: Memory, *, events: Sequence[DomainEvent] = ()) -> None:
        """Insert a new memory and its key alias in one transaction, with its domain `events`
        (the outbox); `KeyTaken` if a live memory holds the key (an expired holder's alias is
        taken over), and then no event."""
        ...

    def set_pinned(self, team: str, memory_id: str, pinned: bool) -> Memory:
        """Set only the `pinned` field (record and key alias in one atomic step, nothing else
        written back, so a change made since the caller's read is kept) and return the stored
        memory; `MemoryGone` when it does not exist."""
        ...

    def drop_alias(self, team: str, key: str, wallet: str | None, memory_id: str) -> None:
        """Remove a key alias, only while it still points at `memory_id` (a dangling one)."""
        ...

    def delete(self, team: str, memory: Memory, *, unless_pinned: bool = False) -> None:
        """Delete the record, and its key alias while that still points at it. With
        `unless_pinned`, only while the stored record is unpinned, in the same atomic step:
        `MemoryPinned` (nothing deleted) when it is pinned."""
        ...

    def iter_team(self, team: str) -> Iterator[Memory]:
        """Every memory record of the team in id order, expired ones included (see above)."""
        ...

    def iter_recent(self, team: str) -> Iterator[Memory]:
        """The team's memories, most recently updated first (expired ones included: the caller
        decides), read lazily."""
        ...

    def add_flag(self, team: str, memory_id: str, flag: MemoryFlag) -> Memory | None:
        """Append a flag in one atomic write; None when the memory does not exist."""
        ...

    def transition(self, team: str, memory: Memory, expected: frozenset[str]) -> Memory:
        """Replace the record in one conditional write, only while its stored `status` is one
        of `expected`; else `StateChanged` carrying the stored record (None when gone). A
        memory leaving the active states gives up its key alias (a retracted key is free).

        The stored pin is kept: `pinned` belongs to `set_pinned`, so a pin or unpin that landed
        since `memory` was read is carried into the write (conditioned on the pin it carries,
        re-read and retried when that lost). Returns what was written."""
        ...

    def supersede(self, team: str, old: Memory, expected: frozenset[str], new: Memory) -> None:
        """In one transaction: replace `old` (while its stored status is one of `expected`,
        else `StateChanged`; its stored pin kept, as in `transition`) and create `new`, which
        takes over `old`'s key alias if it has one."""
        ...


class FindingStore(Protocol):
    """The curator's findings (conflicts, duplicate clusters), always scoped by team. A
    finding's id is derived from its kind and members, so detecting it again adds nothing."""

    def add(self, team: str, finding: Finding, *, events: Sequence[DomainEvent] = ()) -> bool:
        """Store a new finding with its domain `events` in one transaction; False (and
        nothing written, no event either) when its id exists already."""
        ...

    def get(self, team: str, finding_id: str) -> Finding | None: ...

    def iter_team(self, team: str) -> Iterator[Finding]:
        """Every finding of the team, in id order."""
        ...

    def settle(self, team: str, finding: Finding) -> None:
        """Replace an `open` finding with its settled version in one conditional write;
        `StateChanged` (carrying the stored finding) when it is no longer open."""
        ...


class MemoryIndex(Protocol):
    """Ranks a team's memories for a query (the hybrid engine: `shared.search.memory_index`)."""

    def index(self, team: str, memory: Memory) -> None: ...

    def remove(self, team: str, memory_id: str) -> None: ...

    def search(self, team: str, query: str, limit: int) -> list[tuple[str, float]]: ...


class MemorySimilarity(Protocol):
    """Cosine similarity of a text to others, in the search engine's embedding space."""

    def similarities(self, text: str, others: list[str]) -> list[float]: ...


class CurationQueue(Protocol):
    """Where a remembered memory waits for the curator.

    Locally and in tests the curator runs right after the write (`InlineCuration`); in AWS the
    memories table's stream is the queue and the service is given none.
    """

    def submit(self, team: str, memory_id: str) -> None: ...


class MemoryGone(Exception):
    """The memory being replaced was deleted by another writer (or by TTL) meanwhile."""


class MemoryPinned(Exception):
    """A delete `unless_pinned` found the stored record pinned (seed 004's engram pin)."""


class KeyTaken(Exception):
    """A concurrent `memory_put` created the same key first."""


class StateChanged(Exception):
    """A lifecycle transition lost: the record is no longer in the state it was read in
    (another reviewer decided first, it was retracted meanwhile ...). `current` is what the
    store holds now (None when the record is gone)."""

    def __init__(self, current: object | None) -> None:
        super().__init__("state changed")
        self.current = current
