"""The cached search builder makes the embedded default; memories reach the index."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from shared import runtime
from shared.config.settings import Settings
from shared.search.adapters.embedded import EmbeddedIndex
from shared.search.memory_index import SearchMemoryIndex
from shared.search.models import DocumentInput
from shared.search.wiring import build_search_service
from tests.functional.search.conftest import SearchHarness


def test_the_embedded_default_persists_in_the_data_folder(aws: Settings, tmp_path: Path) -> None:
    runtime.configure(aws.model_copy(update={"data_dir": tmp_path}))
    service = build_search_service()
    assert build_search_service() is service  # built once per process
    assert isinstance(service.index, EmbeddedIndex)
    assert service.index.path == tmp_path / "search" / "index.sqlite3"
    service.upsert_documents(
        "alpha", [DocumentInput("local_files", "a.md", "Tides", "spring tides follow the moon")]
    )
    # A restart: caches dropped, the same data folder (and the same moto tables).
    runtime.configure(aws.model_copy(update={"data_dir": tmp_path}))
    again = build_search_service()
    assert again is not service
    page = again.search("alpha", "moon tides", limit=5)
    assert [g.hits[0].chunk.title for g in page.groups] == ["Tides"]
    assert (tmp_path / "search" / "embeddings.sqlite3").exists()


@dataclass
class FakeMemory:
    id: str
    key: str | None
    content: str
    tags: list[str] = field(default_factory=list)
    updated_at: datetime = datetime(2026, 1, 1, tzinfo=UTC)
    expires_at: datetime | None = None

    @property
    def heading(self) -> str | None:
        return self.key


def test_the_memory_index_port_indexes_searches_and_removes(search: SearchHarness) -> None:
    index = SearchMemoryIndex(search.service)
    now = datetime.fromtimestamp(search.clock[0], tz=UTC)
    index.index("alpha", FakeMemory("mem_a", "db", "the primary database is postgres 16"))
    index.index("alpha", FakeMemory("mem_b", "cache", "redis holds sessions", ["infra"]))
    index.index(
        "alpha",
        FakeMemory("mem_old", "tmp", "postgres maintenance window", expires_at=now - timedelta(1)),
    )
    index.index("beta", FakeMemory("mem_c", "db", "the primary database is postgres 16"))
    hits = index.search("alpha", "postgres database", limit=5)
    assert hits[0][0] == "mem_a"
    assert {memory_id for memory_id, _ in hits} <= {"mem_a", "mem_b"}
    assert index.search("alpha", "infra", limit=5)[0][0] == "mem_b"  # tags are searchable
    index.remove("alpha", "mem_a")
    assert "mem_a" not in {m for m, _ in index.search("alpha", "postgres database", limit=5)}
    # Memories never leak into document-only searches.
    page = search.service.search("alpha", "redis sessions", types=frozenset({"entity"}))
    assert page.groups == []


def test_rebuild_reindexes_a_teams_memories_in_one_batch(search: SearchHarness) -> None:
    index = SearchMemoryIndex(lambda: search.service)
    memories = [
        FakeMemory(f"mem_{i}", f"k{i}", f"fact number {i} about lighthouses") for i in range(5)
    ]
    search.embedder.embedded.clear()
    assert index.rebuild("alpha", memories) == 5
    assert len(search.embedder.embedded) == 5
    assert len(index.search("alpha", "lighthouses", limit=10)) == 5
    assert index.search("beta", "lighthouses", limit=10) == []
