"""Documents in the embedded database: the source of truth the search index is rebuilt from.

Two tables, the records as JSON beside the columns reads select on:
- `document_entities`: one row per entity, tombstones included until `expires_at` (epoch
  seconds, set when an entity is deleted, as the DynamoDB item's TTL) has passed;
- `document_chunks`: one row per chunk, keyed `(team, entity_id, chunk_index)`, so one entity's
  chunks, or any window of them, are one range of the primary key.

Every change of an entity (its record and all its chunks) is one write transaction, so a reader
sees an entity together with exactly its chunks — never a half-replaced set.
(Not `embedded.py`: that is the FTS5/numpy search index, a derived copy of these records.)
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from sqlite3 import Connection
from typing import Any, TypeVar

from shared.config.names import TTL_ATTRIBUTE
from shared.search.models import ChunkItem, EntityItem
from shared.storage.snapshot import SnapshotItem, migrate_each
from shared.storage.sqlite import Database, Migration, from_json, to_json
from shared.storage.values import from_dynamo

# The same lifetime the DynamoDB adapter gives a tombstone's TTL.
TOMBSTONE_SECONDS = 30 * 24 * 3600
# iter_entities reads this many rows per statement (keyset paging by id), not the whole team.
_ENTITY_BATCH = 500

MIGRATIONS = (
    Migration(
        "documents",
        1,
        (
            "CREATE TABLE document_entities ("
            " team TEXT NOT NULL, id TEXT NOT NULL, source TEXT NOT NULL,"
            " deleted INTEGER NOT NULL, expires_at INTEGER, record TEXT NOT NULL,"
            " PRIMARY KEY (team, id))",
            # iter_entities with a source: that source's live entities in id order (without a
            # source the primary key serves it).
            "CREATE INDEX document_entities_live_by_source ON document_entities"
            " (team, source, id) WHERE deleted = 0",
            # The lazy purge of expired tombstones.
            "CREATE INDEX document_entities_expiry ON document_entities (team, expires_at)"
            " WHERE expires_at IS NOT NULL",
            "CREATE TABLE document_chunks ("
            " team TEXT NOT NULL, entity_id TEXT NOT NULL, chunk_index INTEGER NOT NULL,"
            " record TEXT NOT NULL, PRIMARY KEY (team, entity_id, chunk_index))",
        ),
    ),
)

_ENTITY_PREFIX = "ENTITY#"
_CHUNK_PREFIX = "CHUNK#"
_TEAM_PREFIX = "TEAM#"
_LIVE = "(expires_at IS NULL OR expires_at > ?)"
_Record = TypeVar("_Record", EntityItem, ChunkItem)


def _entity(row: Any) -> EntityItem:
    return EntityItem.model_validate(from_json(row["record"]))


def _chunk(row: Any) -> ChunkItem:
    return ChunkItem.model_validate(from_json(row["record"]))


def _entity_row(
    team: str, entity: EntityItem, expires_at: int | None
) -> tuple[str, str, str, int, int | None, str]:
    return (
        team,
        entity.id,
        entity.source,
        int(entity.deleted),
        expires_at,
        to_json(entity.model_dump(mode="json", exclude_none=True)),
    )


def _chunk_row(team: str, chunk: ChunkItem) -> tuple[str, str, int, str]:
    return (
        team,
        chunk.entity_id,
        chunk.chunk_index,
        to_json(chunk.model_dump(mode="json", exclude_none=True)),
    )


_UPSERT_ENTITY = (
    "INSERT INTO document_entities (team, id, source, deleted, expires_at, record)"
    " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (team, id) DO UPDATE SET source = excluded.source,"
    " deleted = excluded.deleted, expires_at = excluded.expires_at, record = excluded.record"
)
_INSERT_CHUNK = (
    "INSERT INTO document_chunks (team, entity_id, chunk_index, record) VALUES (?, ?, ?, ?)"
)


class SqliteDocumentStore:
    """`DocumentStore` on the embedded database.

    `clock` (seconds since the epoch) dates tombstones and decides their expiry.
    """

    def __init__(self, db: Database, clock: Callable[[], float] = time.time) -> None:
        self._db = db
        self._clock = clock
        db.migrate(MIGRATIONS)

    def get_entity(self, team: str, entity_id: str) -> EntityItem | None:
        """The entity (tombstones included until they expire), or None."""
        row = (
            self._db.connection()
            .execute(
                f"SELECT record FROM document_entities WHERE team = ? AND id = ? AND {_LIVE}",  # noqa: S608 - a fixed clause
                (team, entity_id, int(self._clock())),
            )
            .fetchone()
        )
        return _entity(row) if row else None

    def put_entity(self, team: str, entity: EntityItem, chunks: Sequence[ChunkItem]) -> None:
        """Store the entity and replace all of its chunks, in one transaction."""
        with self._db.write() as tx:
            tx.execute(
                "DELETE FROM document_chunks WHERE team = ? AND entity_id = ?", (team, entity.id)
            )
            tx.executemany(_INSERT_CHUNK, [_chunk_row(team, chunk) for chunk in chunks])
            tx.execute(_UPSERT_ENTITY, _entity_row(team, entity, None))

    def chunks(self, team: str, entity_id: str) -> list[ChunkItem]:
        """Every chunk of the entity, in order."""
        rows = (
            self._db.connection()
            .execute(
                "SELECT record FROM document_chunks WHERE team = ? AND entity_id = ?"
                " ORDER BY chunk_index",
                (team, entity_id),
            )
            .fetchall()
        )
        return [_chunk(row) for row in rows]

    def chunk_range(self, team: str, entity_id: str, first: int, last: int) -> list[ChunkItem]:
        """Chunks `first..last` inclusive (out-of-range indexes are simply absent)."""
        first = max(first, 0)
        if last < first:
            return []
        rows = (
            self._db.connection()
            .execute(
                "SELECT record FROM document_chunks WHERE team = ? AND entity_id = ?"
                " AND chunk_index BETWEEN ? AND ? ORDER BY chunk_index",
                (team, entity_id, first, last),
            )
            .fetchall()
        )
        return [_chunk(row) for row in rows]

    def mark_deleted(self, team: str, entity_id: str, when: str) -> None:
        """Tombstone the entity (kept `TOMBSTONE_SECONDS`) and drop its chunks, in one
        transaction; expired tombstones of the team are purged on the way."""
        now = int(self._clock())
        with self._db.write() as tx:
            tx.execute(
                "DELETE FROM document_entities WHERE team = ? AND expires_at <= ?", (team, now)
            )
            row = tx.execute(
                "SELECT record FROM document_entities WHERE team = ? AND id = ?",
                (team, entity_id),
            ).fetchone()
            if row is None:
                return
            tombstone = _entity(row).model_copy(
                update={"deleted": True, "chunk_count": 0, "updated_at": when}
            )
            tx.execute(
                "DELETE FROM document_chunks WHERE team = ? AND entity_id = ?", (team, entity_id)
            )
            tx.execute(_UPSERT_ENTITY, _entity_row(team, tombstone, now + TOMBSTONE_SECONDS))

    def iter_entities(self, team: str, source: str | None = None) -> Iterator[EntityItem]:
        """Live entities of `team` (optionally of one `source`), in id order."""
        clauses = "team = ? AND deleted = 0" + (" AND source = ?" if source is not None else "")
        parameters: tuple[Any, ...] = (team,) if source is None else (team, source)
        after: str | None = None
        while True:
            keyset = "" if after is None else " AND id > ?"
            rows = (
                self._db.connection()
                .execute(
                    f"SELECT id, record FROM document_entities WHERE {clauses}{keyset}"  # noqa: S608 - fixed clauses
                    " ORDER BY id LIMIT ?",
                    (*parameters, *(() if after is None else (after,)), _ENTITY_BATCH),
                )
                .fetchall()
            )
            yield from (_entity(row) for row in rows)
            if len(rows) < _ENTITY_BATCH:
                return
            after = rows[-1]["id"]

    def migrate_items(self, items: Iterable[dict[str, Any]]) -> int:
        """Import the entity and chunk items of the old DynamoDB-shaped documents table (other
        items are ignored); returns how many were taken."""

        def write_chunk(tx: sqlite3.Connection, item: SnapshotItem) -> None:
            tx.execute(
                _INSERT_CHUNK.replace("INSERT", "INSERT OR IGNORE", 1),
                _chunk_row(_team_of(item.item), _record(ChunkItem, item.item)),
            )

        return migrate_each(
            self._db,
            items,
            {
                _ENTITY_PREFIX: lambda tx, item: self._import_entity(tx, item.item),
                _CHUNK_PREFIX: write_chunk,
            },
        )

    @staticmethod
    def _import_entity(tx: Connection, item: dict[str, Any]) -> None:
        expires = item.get(TTL_ATTRIBUTE)
        tx.execute(
            "INSERT OR IGNORE INTO document_entities (team, id, source, deleted, expires_at,"
            " record) VALUES (?, ?, ?, ?, ?, ?)",
            _entity_row(
                _team_of(item),
                _record(EntityItem, item),
                None if expires is None else int(expires),
            ),
        )


def _team_of(item: dict[str, Any]) -> str:
    return str(item["pk"]).removeprefix(_TEAM_PREFIX)


def _record(model: type[_Record], item: dict[str, Any]) -> _Record:
    return model.model_validate(
        {k: from_dynamo(v) for k, v in item.items() if k in model.model_fields}
    )
