"""SQLite: rows written before the lifecycle columns existed are migrated in place."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from shared.memory.adapters.sqlite import MIGRATIONS, SqliteMemoryStore
from shared.memory.models import Memory
from shared.storage.sqlite import Database, to_json

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def _old_row(db: Database, memory: Memory) -> None:
    with db.write() as tx:
        tx.execute(
            "INSERT INTO memories (team, id, expires_at, updated_at, record)"
            " VALUES (?, ?, ?, ?, ?)",
            (
                "alpha",
                memory.id,
                None,
                memory.updated_at.isoformat(),
                to_json(memory.model_dump(mode="json", exclude_none=True)),
            ),
        )


def test_existing_rows_take_their_status_from_the_record(tmp_path: Path) -> None:
    db = Database(tmp_path / "cairn.db")
    db.migrate(MIGRATIONS[:1])  # the schema of the version before the lifecycle
    filed = Memory(id="mem_1", content="a", created_at=T0, updated_at=T0, created_by="x")
    pending = filed.model_copy(update={"id": "mem_2", "status": "pending"})
    _old_row(db, filed)
    _old_row(db, pending)
    db.close()

    migrated = Database(tmp_path / "cairn.db")
    store = SqliteMemoryStore(migrated)

    statuses = migrated.connection().execute("SELECT id, status FROM memories ORDER BY id")
    assert [(row["id"], row["status"]) for row in statuses] == [
        ("mem_1", "filed"),
        ("mem_2", "pending"),
    ]
    read = store.get("alpha", "mem_1")
    assert read == filed
    assert read is not None
    assert read.active
    assert read.valid_since == T0  # valid since it was recorded
