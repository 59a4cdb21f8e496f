"""The SearchIndex contract: what every adapter must do, whatever its storage.

The suite runs against the embedded adapter (SQLite FTS5 + numpy). The OpenSearch adapter's
side of the contract is its request/response translation, checked against recorded DSL in
test_opensearch_adapter.py: no OpenSearch server runs here, and a fake that re-implemented the
query DSL would test the fake. Both adapters share fusion, grouping and paging code.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from shared.search.adapters.embedded import EmbeddedIndex
from shared.search.models import ChunkDoc, IndexQuery, SearchFilters, SearchMode
from shared.search.ports import SearchIndex
from tests.unit.search.support import HashingEmbedder

MODES: tuple[SearchMode, ...] = ("hybrid", "bm25", "vector")
EMBEDDER = HashingEmbedder()
NOW = 1_800_000_000.0


def make_embedded(directory: Path) -> SearchIndex:
    return EmbeddedIndex(directory, EMBEDDER.dimensions)


ADAPTERS: dict[str, Callable[[Path], SearchIndex]] = {"embedded": make_embedded}


@pytest.fixture(params=sorted(ADAPTERS))
def index(request: pytest.FixtureRequest, tmp_path: Path) -> SearchIndex:
    return ADAPTERS[request.param](tmp_path)


def doc(team: str, entity: str, text: str, index: int = 0, **extra: object) -> ChunkDoc:
    fields: dict[str, object] = {
        "team": team,
        "entity_id": entity,
        "chunk_id": f"{entity}:{index}",
        "chunk_index": index,
        "text": text,
        "title": extra.pop("title", f"title of {entity}"),
        "source": extra.pop("source", "local_files"),
        "char_offset_start": 0,
        "char_offset_end": len(text),
    }
    fields.update(extra)
    return ChunkDoc(**fields)  # type: ignore[arg-type]


def put(index: SearchIndex, *docs: ChunkDoc) -> None:
    index.index(list(docs), EMBEDDER.embed([d.embedding_text() for d in docs]))


def ask(
    index: SearchIndex,
    text: str,
    team: str = "alpha",
    mode: SearchMode = "hybrid",
    limit: int = 20,
    offset: int = 0,
    **filters: object,
) -> list[str]:
    page = index.query(query(text, team, mode, limit, offset, **filters))
    return [g.entity_id for g in page.groups]


def query(
    text: str,
    team: str = "alpha",
    mode: SearchMode = "hybrid",
    limit: int = 20,
    offset: int = 0,
    **filters: object,
) -> IndexQuery:
    vector = [float(x) for x in EMBEDDER.embed([text])[0]]
    return IndexQuery(
        text=text,
        vector=vector,
        filters=SearchFilters(team=team, now=float(filters.pop("now", NOW)), **filters),  # type: ignore[arg-type]
        mode=mode,
        offset=offset,
        limit=limit,
    )


@pytest.mark.parametrize("mode", MODES)
def test_a_query_only_ever_returns_the_callers_team(index: SearchIndex, mode: SearchMode) -> None:
    put(
        index,
        doc("alpha", "a1", "kubernetes deployment rollback procedure"),
        doc("beta", "b1", "kubernetes deployment rollback procedure"),
        doc("beta", "b2", "kubernetes cluster upgrade"),
    )
    page = index.query(query("kubernetes deployment rollback", "alpha", mode))
    chunks = [h.chunk for g in page.groups for h in g.hits]
    assert chunks
    assert {c.team for c in chunks} == {"alpha"}
    assert ask(index, "kubernetes", "gamma", mode) == []


@pytest.mark.parametrize("mode", MODES)
def test_the_source_filter_keeps_only_that_source(index: SearchIndex, mode: SearchMode) -> None:
    put(
        index,
        doc("alpha", "notes", "quarterly planning meeting", source="local_files"),
        doc("alpha", "wiki", "quarterly planning meeting", source="obsidian"),
    )
    assert ask(index, "quarterly planning", mode=mode, source="obsidian") == ["wiki"]


@pytest.mark.parametrize("mode", MODES)
def test_the_types_filter_separates_entities_and_memories(
    index: SearchIndex, mode: SearchMode
) -> None:
    put(
        index,
        doc("alpha", "doc1", "deploy checklist for the api"),
        doc("alpha", "mem_1", "deploy checklist for the api", result_type="memory"),
    )
    assert ask(index, "deploy checklist", mode=mode, types=frozenset({"memory"})) == ["mem_1"]
    assert ask(index, "deploy checklist", mode=mode, types=frozenset({"entity"})) == ["doc1"]


@pytest.mark.parametrize("mode", MODES)
def test_expired_chunks_are_never_returned(index: SearchIndex, mode: SearchMode) -> None:
    put(
        index,
        doc("alpha", "mem_old", "the wifi password rotates monthly", expires_at=NOW - 1),
        doc("alpha", "mem_new", "the wifi password rotates monthly", expires_at=NOW + 60),
    )
    assert ask(index, "wifi password", mode=mode) == ["mem_new"]
    assert ask(index, "wifi password", mode=mode, now=NOW + 61) == []
    assert index.entity_chunks("alpha", "mem_old", NOW) == []
    assert len(index.entity_chunks("alpha", "mem_new", NOW)) == 1


@pytest.mark.parametrize("mode", MODES)
def test_a_deleted_entity_is_never_returned(index: SearchIndex, mode: SearchMode) -> None:
    put(index, doc("alpha", "gone", "incident postmortem database failover"))
    put(index, doc("beta", "gone", "incident postmortem database failover"))
    index.delete_entity("alpha", "gone")
    assert ask(index, "postmortem failover", mode=mode) == []
    assert ask(index, "postmortem failover", "beta", mode) == ["gone"]


def test_reindexing_an_entity_replaces_all_its_chunks(index: SearchIndex) -> None:
    put(index, *(doc("alpha", "e", f"old chunk number {i} zebra", i) for i in range(4)))
    put(index, doc("alpha", "e", "new single chunk giraffe"))
    assert ask(index, "zebra", mode="bm25") == []
    page = index.query(query("zebra"))
    assert [h.chunk.text for g in page.groups for h in g.hits] == ["new single chunk giraffe"]
    assert [c.text for c in index.entity_chunks("alpha", "e", NOW)] == ["new single chunk giraffe"]


def test_hybrid_finds_what_either_ranking_finds_and_ranks_agreement_first(
    index: SearchIndex,
) -> None:
    put(
        index,
        doc("alpha", "both", "postgres vacuum tuning guide", title="postgres vacuum"),
        doc("alpha", "lexical", "postgres replication lag alarms", title="alarms"),
        doc("alpha", "other", "frontend css grid layout", title="css"),
    )
    bm25 = ask(index, "postgres vacuum", mode="bm25")
    hybrid = ask(index, "postgres vacuum", mode="hybrid")
    assert hybrid[0] == "both"
    assert set(bm25) <= set(hybrid)


def test_an_entity_contributes_at_most_three_chunks_best_first(index: SearchIndex) -> None:
    put(
        index,
        *(doc("alpha", "long", f"release notes part {i} for version two", i) for i in range(6)),
    )
    page = index.query(query("release notes version"))
    assert len(page.groups) == 1
    scores = [h.score for h in page.groups[0].hits]
    assert len(scores) == 3
    assert scores == sorted(scores, reverse=True)


@pytest.mark.parametrize("mode", MODES)
def test_paging_through_results_has_no_gaps_or_repeats(
    index: SearchIndex, mode: SearchMode
) -> None:
    put(
        index,
        *(
            doc("alpha", f"e{i:02d}", f"shared topic word {'extra ' * i} item{i}")
            for i in range(23)
        ),
    )
    everything = ask(index, "shared topic word", mode=mode, limit=100)
    paged: list[str] = []
    offset = 0
    while True:
        page = index.query(query("shared topic word", mode=mode, limit=5, offset=offset))
        paged += [g.entity_id for g in page.groups]
        if not page.has_more:
            break
        offset += 5
    assert paged == everything
    assert len(set(paged)) == len(paged) == 23


def test_entity_ids_lists_documents_not_memories(index: SearchIndex) -> None:
    put(
        index,
        doc("alpha", "d1", "x"),
        doc("alpha", "d2", "y", source="obsidian"),
        doc("alpha", "mem_1", "z", result_type="memory", source="memory"),
        doc("beta", "d3", "w"),
    )
    assert index.entity_ids("alpha") == {"d1", "d2"}
    assert index.entity_ids("alpha", "obsidian") == {"d2"}


def test_a_query_without_usable_words_still_ranks_by_vector(index: SearchIndex) -> None:
    put(index, doc("alpha", "d1", "the and of"))
    assert ask(index, "the of", mode="bm25") == []
    assert ask(index, "the of", mode="vector") == ["d1"]


def test_the_embedded_index_survives_a_restart(tmp_path: Path) -> None:
    first = EmbeddedIndex(tmp_path, EMBEDDER.dimensions)
    put(first, doc("alpha", "kept", "durable knowledge about backups"))
    reopened = EmbeddedIndex(tmp_path, EMBEDDER.dimensions)
    assert ask(reopened, "backups") == ["kept"]
    assert ask(reopened, "backups", mode="vector") == ["kept"]


def test_concurrent_writers_and_readers_do_not_interfere(tmp_path: Path) -> None:
    index = EmbeddedIndex(tmp_path, EMBEDDER.dimensions)
    errors: list[BaseException] = []

    def write(worker: int) -> None:
        try:
            for i in range(15):
                put(index, doc("alpha", f"w{worker}-{i}", f"concurrent write {worker} {i}"))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    def read() -> None:
        try:
            for _ in range(30):
                ask(index, "concurrent write")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(w,)) for w in range(3)]
    threads += [threading.Thread(target=read) for _ in range(3)]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors, errors
    assert time.monotonic() - started < 60
    assert len(ask(index, "concurrent write", limit=100)) == 45


def test_an_index_file_of_another_schema_version_is_recreated_empty(tmp_path: Path) -> None:
    import sqlite3

    first = EmbeddedIndex(tmp_path, EMBEDDER.dimensions)
    put(first, doc("alpha", "kept", "durable knowledge about backups"))
    conn = sqlite3.connect(str(first.path))
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    reopened = EmbeddedIndex(tmp_path, EMBEDDER.dimensions)
    assert ask(reopened, "backups") == []
    put(reopened, doc("alpha", "again", "backups indexed again"))
    assert ask(reopened, "backups", mode="bm25") == ["again"]
