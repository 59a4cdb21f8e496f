"""What the knowledge service needs from the outside: four stores, an index, a queue, a model.

Every store method takes the team first; no read reaches another team's data.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol

from shared.knowledge.models import (
    CiRun,
    Entity,
    EntitySighting,
    Event,
    KnowledgeNode,
    Lesson,
    LessonOccurrence,
    Project,
)

# How far a listing that filters in code may read back (newest first) before it stops: the
# price of seed 003's substring filters on a key-value store. Documented in docs/knowledge.md.
SCAN_CAP = 5_000


class EventStore(Protocol):
    """Captured events, idempotent by (team, id)."""

    def put_new(self, team: str, events: Sequence[Event]) -> list[str]:
        """Store the events whose id the team has not stored yet; returns the ids stored."""
        ...

    def get_many(self, team: str, ids: Sequence[str]) -> list[Event]:
        """The events of these ids that exist, in the order asked."""
        ...

    def recent(self, team: str, *, since_ms: int = 0, cap: int = SCAN_CAP) -> Iterator[Event]:
        """The team's events at or after `since_ms`, newest first, at most `cap`."""
        ...

    def projects(self, team: str, limit: int) -> list[Project]:
        """Distinct (git_repo, cwd_root) pairs, most recent activity first."""
        ...


class NodeStore(Protocol):
    """Knowledge nodes (the source of truth; the search index is derived from them)."""

    def put(self, team: str, node: KnowledgeNode) -> None:
        """Insert or replace a node by uuid."""
        ...

    def get_nodes(self, team: str, ids: Sequence[str]) -> list[KnowledgeNode]:
        """The nodes of these ids that exist, in the order asked."""
        ...

    def open_session(self, team: str, session_key: str, after_ms: int) -> KnowledgeNode | None:
        """The newest node of `session_key` whose last event is at or after `after_ms`."""
        ...

    def recent_nodes(
        self, team: str, *, since_ms: int = 0, cap: int = SCAN_CAP
    ) -> Iterator[KnowledgeNode]:
        """Nodes by `captured_at`, newest first."""
        ...


class EntityStore(Protocol):
    def record(self, team: str, sightings: Sequence[EntitySighting]) -> None:
        """Upsert by (type, canonical): first_seen = min, last_seen = max, places merged."""
        ...

    def entities(self, team: str, *, entity_type: str = "", cap: int = SCAN_CAP) -> list[Entity]:
        """The team's entities (of one type), most recently seen first."""
        ...


class LessonStore(Protocol):
    """CI runs, and lesson candidates that graduate at two occurrences."""

    def put_run(self, team: str, run: CiRun) -> None:
        """Insert or replace a run by (repo, run_id), unless the stored one is newer."""
        ...

    def get_run(self, team: str, repo: str, run_id: str) -> CiRun | None: ...

    def latest_run(
        self, team: str, repo: str, *, sha: str | None = None, branch: str | None = None
    ) -> CiRun | None:
        """The most recently updated run of `repo` (of that sha prefix, else of that branch)."""
        ...

    def record_occurrence(self, team: str, occurrence: LessonOccurrence) -> Lesson:
        """Count one failure of the occurrence's key; the same occurrence id never counts
        twice."""
        ...

    def lessons(self, team: str, *, min_occurrences: int = 2) -> list[Lesson]:
        """Lessons with at least `min_occurrences`, most recently seen first."""
        ...


class KnowledgeStores(EventStore, NodeStore, EntityStore, LessonStore, Protocol):
    """The four stores served by one adapter (they share one table or database)."""


class NodeIndex(Protocol):
    """The hybrid engine, seen from the knowledge group: index nodes, rank them."""

    def index(self, team: str, nodes: Sequence[KnowledgeNode]) -> None: ...

    def query(self, team: str, text: str, mode: str, limit: int) -> list[tuple[str, float]]:
        """`(uuid, score)` best first; `mode` is hybrid, semantic or lexical."""
        ...


class EnrichmentQueue(Protocol):
    """Hands newly stored events to the enricher (SQS in AWS, a background thread locally)."""

    def submit(self, team: str, event_ids: Sequence[str]) -> None: ...


class ChatModel(Protocol):
    """A chat model for `ask`'s synthesis (Bedrock Converse, or an OpenAI-compatible endpoint)."""

    @property
    def name(self) -> str: ...

    def complete(self, system: str, prompt: str) -> str:
        """The model's reply; `ModelUnavailable` when it cannot be reached or refuses."""
        ...


class ModelUnavailable(Exception):
    """The configured model could not answer (unreachable, misconfigured, refused)."""
