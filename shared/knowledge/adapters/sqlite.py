"""The knowledge stores in the embedded database: one table per store, records as JSON beside
the columns that lookups and time order use."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TypeVar

from pydantic import BaseModel

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
from shared.knowledge.ports import SCAN_CAP
from shared.storage.sqlite import Database, Migration, from_json, id_batches, to_json

M = TypeVar("M", bound=BaseModel)

MAX_PLACES = 20
MAX_OCCURRENCE_IDS = 50

MIGRATIONS = (
    Migration(
        "knowledge",
        1,
        (
            "CREATE TABLE knowledge_events (team TEXT NOT NULL, id TEXT NOT NULL,"
            " ts INTEGER NOT NULL, record TEXT NOT NULL, PRIMARY KEY (team, id))",
            "CREATE INDEX knowledge_events_time ON knowledge_events (team, ts DESC, id DESC)",
            "CREATE TABLE knowledge_projects (team TEXT NOT NULL, git_repo TEXT NOT NULL,"
            " cwd_root TEXT NOT NULL, last_seen INTEGER NOT NULL,"
            " PRIMARY KEY (team, git_repo, cwd_root))",
            "CREATE TABLE knowledge_nodes (team TEXT NOT NULL, id TEXT NOT NULL,"
            " captured_at INTEGER NOT NULL, session_key TEXT NOT NULL, record TEXT NOT NULL,"
            " PRIMARY KEY (team, id))",
            "CREATE INDEX knowledge_nodes_time ON knowledge_nodes (team, captured_at DESC, id)",
            "CREATE INDEX knowledge_nodes_session ON knowledge_nodes"
            " (team, session_key, captured_at DESC)",
            "CREATE TABLE knowledge_entities (team TEXT NOT NULL, type TEXT NOT NULL,"
            " canonical TEXT NOT NULL, last_seen INTEGER NOT NULL, record TEXT NOT NULL,"
            " PRIMARY KEY (team, type, canonical))",
            "CREATE TABLE knowledge_ci_runs (team TEXT NOT NULL, repo TEXT NOT NULL,"
            " run_id TEXT NOT NULL, sha TEXT NOT NULL, branch TEXT NOT NULL,"
            " updated_at INTEGER NOT NULL, record TEXT NOT NULL,"
            " PRIMARY KEY (team, repo, run_id))",
            "CREATE INDEX knowledge_ci_recent ON knowledge_ci_runs (team, repo, updated_at DESC)",
            "CREATE TABLE knowledge_lessons (team TEXT NOT NULL, key TEXT NOT NULL,"
            " occurrences INTEGER NOT NULL, last_seen INTEGER NOT NULL, seen_ids TEXT NOT NULL,"
            " record TEXT NOT NULL, PRIMARY KEY (team, key))",
        ),
    ),
)


def project_of(event: Event) -> tuple[str, str] | None:
    """(git_repo, cwd_root) of an event with a place; browser events have none, and a probe
    event counts for none (seed 003: probes never appear in any tool, list_projects included)."""
    root = event.repo_root or event.cwd
    if event.source == "browser" or event.probe_tag is not None or not (root or event.git_repo):
        return None
    return event.git_repo or "", root or ""


class SqliteKnowledgeStores:
    """`EventStore`, `NodeStore`, `EntityStore` and `LessonStore` on the embedded database."""

    def __init__(self, db: Database) -> None:
        self._db = db
        db.migrate(MIGRATIONS)

    # ------------------------------------------------------------------ events

    def put_new(self, team: str, events: Sequence[Event]) -> list[str]:
        stored: list[str] = []
        with self._db.write() as tx:
            for event in events:
                inserted = tx.execute(
                    "INSERT OR IGNORE INTO knowledge_events (team, id, ts, record)"
                    " VALUES (?, ?, ?, ?)",
                    (team, event.id, event.timestamp, to_json(event.model_dump(mode="json"))),
                ).rowcount
                if inserted != 1:
                    continue
                stored.append(event.id)
                if (project := project_of(event)) is not None:
                    tx.execute(
                        "INSERT INTO knowledge_projects (team, git_repo, cwd_root, last_seen)"
                        " VALUES (?, ?, ?, ?) ON CONFLICT (team, git_repo, cwd_root)"
                        " DO UPDATE SET last_seen = MAX(last_seen, excluded.last_seen)",
                        (team, *project, event.timestamp),
                    )
        return stored

    def get_many(self, team: str, ids: Sequence[str]) -> list[Event]:
        return self._records("knowledge_events", Event, team, ids)

    def _records(self, table: str, model: type[M], team: str, ids: Sequence[str]) -> list[M]:
        """The records of `ids` in `table` as `model`s, in the order of `ids` (unknown ids left
        out), read 500 ids a query."""
        found: dict[str, M] = {}
        connection = self._db.connection()
        for batch, marks in id_batches(ids):
            for row in connection.execute(
                f"SELECT id, record FROM {table} WHERE team = ? AND id IN ({marks})",  # noqa: S608
                (team, *batch),
            ):
                found[row["id"]] = model.model_validate(from_json(row["record"]))
        return [found[i] for i in ids if i in found]

    def recent(self, team: str, *, since_ms: int = 0, cap: int = SCAN_CAP) -> Iterator[Event]:
        rows = (
            self._db.connection()
            .execute(
                "SELECT record FROM knowledge_events WHERE team = ? AND ts >= ?"
                " ORDER BY ts DESC, id DESC LIMIT ?",
                (team, since_ms, cap),
            )
            .fetchall()
        )
        for row in rows:
            yield Event.model_validate(from_json(row["record"]))

    def projects(self, team: str, limit: int) -> list[Project]:
        rows = self._db.connection().execute(
            "SELECT git_repo, cwd_root, last_seen FROM knowledge_projects WHERE team = ?"
            " ORDER BY last_seen DESC, git_repo, cwd_root LIMIT ?",
            (team, limit),
        )
        return [Project(git_repo=r[0], cwd_root=r[1], last_seen=r[2]) for r in rows]

    # ------------------------------------------------------------------ nodes

    def put(self, team: str, node: KnowledgeNode) -> None:
        with self._db.write() as tx:
            tx.execute(
                "INSERT OR REPLACE INTO knowledge_nodes (team, id, captured_at, session_key,"
                " record) VALUES (?, ?, ?, ?, ?)",
                (
                    team,
                    node.uuid,
                    node.captured_at,
                    node.session_key,
                    to_json(node.model_dump(mode="json")),
                ),
            )

    def get_nodes(self, team: str, ids: Sequence[str]) -> list[KnowledgeNode]:
        return self._records("knowledge_nodes", KnowledgeNode, team, ids)

    def open_session(self, team: str, session_key: str, after_ms: int) -> KnowledgeNode | None:
        row = (
            self._db.connection()
            .execute(
                "SELECT record FROM knowledge_nodes WHERE team = ? AND session_key = ?"
                " AND captured_at >= ? ORDER BY captured_at DESC LIMIT 1",
                (team, session_key, after_ms),
            )
            .fetchone()
        )
        return KnowledgeNode.model_validate(from_json(row["record"])) if row else None

    def recent_nodes(
        self, team: str, *, since_ms: int = 0, cap: int = SCAN_CAP
    ) -> Iterator[KnowledgeNode]:
        rows = (
            self._db.connection()
            .execute(
                "SELECT record FROM knowledge_nodes WHERE team = ? AND captured_at >= ?"
                " ORDER BY captured_at DESC, id LIMIT ?",
                (team, since_ms, cap),
            )
            .fetchall()
        )
        for row in rows:
            yield KnowledgeNode.model_validate(from_json(row["record"]))

    # ------------------------------------------------------------------ entities

    def record(self, team: str, sightings: Sequence[EntitySighting]) -> None:
        merged = merge_sightings(sightings)
        if not merged:
            return
        with self._db.write() as tx:
            for entity in merged:
                row = tx.execute(
                    "SELECT record FROM knowledge_entities WHERE team = ? AND type = ?"
                    " AND canonical = ?",
                    (team, entity.type, entity.canonical),
                ).fetchone()
                if row is not None:
                    entity = combine(Entity.model_validate(from_json(row["record"])), entity)
                tx.execute(
                    "INSERT OR REPLACE INTO knowledge_entities (team, type, canonical, last_seen,"
                    " record) VALUES (?, ?, ?, ?, ?)",
                    (
                        team,
                        entity.type,
                        entity.canonical,
                        entity.last_seen,
                        to_json(entity.model_dump(mode="json")),
                    ),
                )

    def entities(self, team: str, *, entity_type: str = "", cap: int = SCAN_CAP) -> list[Entity]:
        clause, parameters = ("AND type = ?", [entity_type]) if entity_type else ("", [])
        rows = self._db.connection().execute(
            f"SELECT record FROM knowledge_entities WHERE team = ? {clause}"  # noqa: S608
            " ORDER BY last_seen DESC, type, canonical LIMIT ?",
            (team, *parameters, cap),
        )
        return [Entity.model_validate(from_json(r["record"])) for r in rows]

    # ------------------------------------------------------------------ CI and lessons

    def put_run(self, team: str, run: CiRun) -> None:
        with self._db.write() as tx:
            tx.execute(
                "INSERT INTO knowledge_ci_runs (team, repo, run_id, sha, branch, updated_at,"
                " record) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (team, repo, run_id) DO UPDATE"
                " SET sha = excluded.sha, branch = excluded.branch,"
                " updated_at = excluded.updated_at, record = excluded.record"
                " WHERE excluded.updated_at >= knowledge_ci_runs.updated_at",
                (
                    team,
                    run.repo,
                    run.run_id,
                    run.sha,
                    run.branch,
                    run.updated_at,
                    to_json(run.model_dump(mode="json")),
                ),
            )

    def get_run(self, team: str, repo: str, run_id: str) -> CiRun | None:
        row = (
            self._db.connection()
            .execute(
                "SELECT record FROM knowledge_ci_runs WHERE team = ? AND repo = ? AND run_id = ?",
                (team, repo, run_id),
            )
            .fetchone()
        )
        return CiRun.model_validate(from_json(row["record"])) if row else None

    def latest_run(
        self, team: str, repo: str, *, sha: str | None = None, branch: str | None = None
    ) -> CiRun | None:
        clause, parameters = "", []
        if sha:
            clause, parameters = "AND sha LIKE ? ESCAPE '\\'", [_like_prefix(sha)]
        elif branch:
            clause, parameters = "AND branch = ?", [branch]
        row = (
            self._db.connection()
            .execute(
                f"SELECT record FROM knowledge_ci_runs WHERE team = ? AND repo = ? {clause}"  # noqa: S608
                " ORDER BY updated_at DESC, run_id DESC LIMIT 1",
                (team, repo, *parameters),
            )
            .fetchone()
        )
        return CiRun.model_validate(from_json(row["record"])) if row else None

    def record_occurrence(self, team: str, occurrence: LessonOccurrence) -> Lesson:
        with self._db.write() as tx:
            row = tx.execute(
                "SELECT seen_ids, record FROM knowledge_lessons WHERE team = ? AND key = ?",
                (team, occurrence.key.key),
            ).fetchone()
            seen: list[str] = from_json(row["seen_ids"]) if row else []
            lesson = (
                Lesson.model_validate(from_json(row["record"]))
                if row
                else occurrence.first_lesson()
            )
            if occurrence.id in seen:
                return lesson
            lesson = occurrence.counted_in(lesson, first=row is None)
            seen = [*seen, occurrence.id][-MAX_OCCURRENCE_IDS:]
            tx.execute(
                "INSERT OR REPLACE INTO knowledge_lessons (team, key, occurrences, last_seen,"
                " seen_ids, record) VALUES (?, ?, ?, ?, ?, ?)",
                (
                    team,
                    occurrence.key.key,
                    lesson.occurrences,
                    lesson.last_seen_at,
                    to_json(seen),
                    to_json(lesson.model_dump(mode="json")),
                ),
            )
        return lesson

    def lessons(self, team: str, *, min_occurrences: int = 2) -> list[Lesson]:
        rows = self._db.connection().execute(
            "SELECT record FROM knowledge_lessons WHERE team = ? AND occurrences >= ?"
            " ORDER BY last_seen DESC, key",
            (team, min_occurrences),
        )
        return [Lesson.model_validate(from_json(r["record"])) for r in rows]


def _like_prefix(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped + "%"


def merge_sightings(sightings: Sequence[EntitySighting]) -> list[Entity]:
    """One entity per (type, canonical) of a batch, its times and places merged."""
    merged: dict[tuple[str, str], Entity] = {}
    for s in sightings:
        entity = Entity(
            type=s.type,
            name=s.name,
            canonical=s.canonical,
            first_seen=s.seen_at,
            last_seen=s.seen_at,
            places=[s.place] if s.place else [],
        )
        key = (s.type, s.canonical)
        merged[key] = combine(merged[key], entity) if key in merged else entity
    return list(merged.values())


def combine(old: Entity, new: Entity) -> Entity:
    places = list(dict.fromkeys([*new.places, *old.places]))[:MAX_PLACES]
    return old.model_copy(
        update={
            "name": new.name if new.last_seen >= old.last_seen else old.name,
            "first_seen": min(old.first_seen, new.first_seen),
            "last_seen": max(old.last_seen, new.last_seen),
            "places": places,
        }
    )
