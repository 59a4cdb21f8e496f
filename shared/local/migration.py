"""One-time migration of a data folder written by cairn before the SQLite store.

Those versions kept every table in moto and snapshotted it to `dynamodb.json`: each table's items
in DynamoDB's wire format, keyed by the table's physical name. At start, when that file exists
and the database has not taken it yet, every item is handed to the SQLite adapters of the stores
that lived in that table (each takes the records it owns, by key prefix, and ignores the rest),
all in the database the server then runs on; the file is then renamed `dynamodb.json.migrated`
so it is read once and kept for reference.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from boto3.dynamodb.types import TypeDeserializer

from shared.config import names
from shared.storage.sqlite import Database

LEGACY_SNAPSHOT = "dynamodb.json"
MIGRATED_SUFFIX = ".migrated"

# Takes deserialized items of one old table and imports the ones it owns; returns how many.
Importer = Callable[[Iterable[dict[str, Any]]], int]


@dataclass
class MigrationReport:
    """What a migration imported, per old table."""

    source: Path
    imported: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.imported.values())

    def summary(self) -> str:
        parts = ", ".join(f"{table} {count}" for table, count in sorted(self.imported.items()))
        return (
            f"migrated {self.total} records from {self.source.name} into the SQLite store "
            f"({parts or 'nothing to import'}); the old file is kept as "
            f"{self.source.name}{MIGRATED_SUFFIX}"
        )


def pending_snapshot(data_dir: Path) -> Path | None:
    """The old snapshot when it still waits to be migrated."""
    path = data_dir / LEGACY_SNAPSHOT
    return path if path.is_file() else None


def migrate_snapshot(
    path: Path,
    importers: Mapping[str, Sequence[Importer]],
    table_names: Mapping[str, str],
) -> MigrationReport:
    """Import `path` through `importers` (logical table id → importers of that table's stores).

    `table_names` maps each logical table id to the physical name the old snapshot used.
    Items of tables no importer claims are counted as skipped (rate-limit windows: scratch).
    """
    snapshot: dict[str, list[dict[str, Any]]] = json.loads(path.read_text())
    deserializer = TypeDeserializer()
    by_physical = {physical: logical for logical, physical in table_names.items()}
    report = MigrationReport(source=path)
    for physical, wire_items in snapshot.items():
        logical = by_physical.get(physical, physical)
        items = [{k: deserializer.deserialize(v) for k, v in item.items()} for item in wire_items]
        taken = sum(importer(items) for importer in importers.get(logical, ()))
        report.imported[logical] = taken
        report.skipped[logical] = len(items) - taken
    os.replace(path, path.with_name(path.name + MIGRATED_SUFFIX))
    return report


def legacy_importers(db: Database) -> dict[str, list[Importer]]:
    """Each old table's importers: the SQLite adapters of the stores that lived in it."""
    from shared.auth.adapters.sqlite import SqliteTokenStore
    from shared.handoffs.adapters.sqlite import SqliteHandoffStore
    from shared.memory.adapters.sqlite import SqliteMemoryStore
    from shared.orchestrator.agents.sqlite import SqliteAgentStore
    from shared.orchestrator.artifacts.sqlite import SqliteArtifactRecords
    from shared.orchestrator.costs.adapters.sqlite import SqliteCostLedger
    from shared.orchestrator.events.adapters.sqlite import SqliteEventLog
    from shared.orchestrator.tasks.adapters.sqlite import SqliteTaskStore
    from shared.search.adapters.sqlite_documents import SqliteDocumentStore
    from shared.sync.adapters.sqlite import SqliteSyncState

    return {
        names.TABLE_TOKENS: [SqliteTokenStore(db).migrate_items],
        names.TABLE_MEMORIES: [SqliteMemoryStore(db).migrate_items],
        names.TABLE_DOCUMENTS: [SqliteDocumentStore(db).migrate_items],
        names.TABLE_HANDOFFS: [SqliteHandoffStore(db).migrate_items],
        names.TABLE_SYNC: [SqliteSyncState(db).migrate_items],
        names.TABLE_COORDINATION: [
            SqliteAgentStore(db).migrate_items,
            SqliteTaskStore(db).migrate_items,
            SqliteArtifactRecords(db).migrate_items,
            SqliteEventLog(db).migrate_items,
            SqliteCostLedger(db).migrate_items,
        ],
    }
