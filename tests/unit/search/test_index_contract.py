"""The SearchIndex contract: what every adapter must do, whatever its storage.

Every test taking `index` (or `reopen`) runs against each adapter: the embedded index (SQLite
FTS5 + numpy, in a temporary folder) and the OpenSearch adapter — Serverless-style
(auto-generated ids) and managed-domain-style (deterministic ids) — on `FakeOpenSearch`, an
in-memory stand-in for the `opensearchpy` client. The fake interprets only the DSL subset the
adapter emits (bool, term, terms, range, exists, multi_match BM25, filtered knn, composite
aggregation, bulk index/delete) and rejects everything else, so a request that drops the team
filter or the expiry filter returns the wrong chunks and fails the contract, and a request
using anything the fake does not model fails loudly. The request shapes themselves stay pinned
by the recorded-DSL tests in test_opensearch_adapter.py. The few embedded-only tests at the end
say why they do not apply to OpenSearch.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from shared.search.adapters.embedded import EmbeddedIndex
from shared.search.adapters.opensearch import OpenSearchIndex
from shared.search.models import ChunkDoc, IndexQuery, SearchFilters, SearchMode
from shared.search.ports import SearchIndex
from tests.unit.search.fake_opensearch import FakeOpenSearch
from tests.unit.search.support import HashingEmbedder

MODES: tuple[SearchMode, ...] = ("hybrid", "bm25", "vector")
EMBEDDER = HashingEmbedder()
NOW = 1_800_000_000.0
# Hits or buckets per OpenSearch lookup: small, so the contract's larger batches page.
OPENSEARCH_PAGE = 20

# An adapter backend: given a fresh folder, a function that opens (or re-opens, after a
# "restart") the index on that backend's storage.
Backend = Callable[[Path], Callable[[], SearchIndex]]


def embedded(directory: Path) -> Callable[[], SearchIndex]:
    return lambda: EmbeddedIndex(directory, EMBEDDER.dimensions)


def opensearch(serverless: bool) -> Backend:
    def backend(_: Path) -> Callable[[], SearchIndex]:
        server = FakeOpenSearch(serverless=serverless)

        def open_index() -> SearchIndex:
            index = OpenSearchIndex(
                server,
                "cairn-chunks",
                EMBEDDER.dimensions,
                serverless=serverless,
                page_size=OPENSEARCH_PAGE,
            )
            return index  # a cold start: team indexes are created on their first write

        return open_index

    return backend


ADAPTERS: dict[str, Backend] = {
    "embedded": embedded,
    "opensearch": opensearch(serverless=True),
    "opensearch-managed": opensearch(serverless=False),
}


@pytest.fixture(params=sorted(ADAPTERS))
def reopen(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], SearchIndex]:
    return ADAPTERS[request.param](tmp_path)


@pytest.fixture
def index(reopen: Callable[[], SearchIndex]) -> SearchIndex:
    return reopen()


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
def test_other_teams_better_matches_never_crowd_out_the_callers(
    index: SearchIndex, mode: SearchMode
) -> None:
    # More of beta's chunks than any adapter's ranking depth (300 embedded, 100 OpenSearch)
    # outscore alpha's in both rankings: the team must filter the ranking itself, not only
    # its results, or alpha's chunk falls off both candidate lists.
    crowd = [
        doc("beta", f"b{i:03d}", "kubernetes kubernetes", title="kubernetes") for i in range(310)
    ]
    put(index, *crowd, doc("alpha", "a1", "kubernetes upgrade notes", title="cluster"))
    assert ask(index, "kubernetes", "alpha", mode) == ["a1"]


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
def test_knowledge_nodes_appear_only_when_asked_for(index: SearchIndex, mode: SearchMode) -> None:
    # The knowledge group's nodes share the index; `search` (entity + memory) never sees them.
    put(
        index,
        doc("alpha", "doc1", "deploy checklist for the api"),
        doc("alpha", "kn_1", "deploy checklist for the api", result_type="knowledge"),
    )
    assert ask(index, "deploy checklist", mode=mode, types=frozenset({"entity", "memory"})) == [
        "doc1"
    ]
    assert ask(index, "deploy checklist", mode=mode, types=frozenset({"knowledge"})) == ["kn_1"]


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
    page = index.query(query("giraffe"))
    assert [h.chunk.text for g in page.groups for h in g.hits] == ["new single chunk giraffe"]
    assert [c.text for c in index.entity_chunks("alpha", "e", NOW)] == ["new single chunk giraffe"]


def test_hybrid_finds_what_either_ranking_finds_and_ranks_agreement_first(
    index: SearchIndex,
) -> None:
    put(
        index,
        doc("alpha", "both", "postgres vacuum tuning guide", title="postgres vacuum"),
        doc("alpha", "lexical", "replication lag alarms during postgres vacuum", title="alarms"),
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


@pytest.mark.parametrize("mode", MODES)
def test_delete_team_erases_that_team_only(index: SearchIndex, mode: SearchMode) -> None:
    put(
        index,
        doc("alpha", "d1", "shared words here", 0),
        doc("alpha", "d1", "shared words there", 1),
        doc("alpha", "mem_1", "shared memory", result_type="memory", source="memory"),
        doc("beta", "d2", "shared words here"),
    )
    assert index.delete_team("alpha") == 3
    assert ask(index, "shared words", "alpha", mode) == []
    assert index.entity_ids("alpha") == set()
    assert ask(index, "shared words", "beta", mode) == ["d2"]
    assert index.delete_team("alpha") == 0  # nothing left: not an error
    put(index, doc("alpha", "d3", "shared words again"))  # the team can start over
    assert ask(index, "shared words", "alpha", mode) == ["d3"]


def test_a_query_without_usable_words_still_ranks_by_vector(index: SearchIndex) -> None:
    put(index, doc("alpha", "d1", "the and of"))
    assert ask(index, "the of", mode="bm25") == []
    assert ask(index, "the of", mode="vector") == ["d1"]


def test_delete_entity_removes_every_chunk_and_ignores_an_unknown_entity(
    index: SearchIndex,
) -> None:
    many = OPENSEARCH_PAGE + 5  # more chunks than one OpenSearch lookup page
    put(index, *(doc("alpha", "big", f"appendix part {i} walrus", i) for i in range(many)))
    put(index, doc("alpha", "small", "walrus sighting log"))
    index.delete_entity("alpha", "big")
    index.delete_entity("alpha", "never-indexed")
    assert index.entity_chunks("alpha", "big", NOW) == []
    assert ask(index, "walrus", mode="bm25") == ["small"]
    assert ask(index, "appendix part walrus", mode="vector", limit=100) == ["small"]


def test_entity_chunks_are_one_entitys_live_chunks_in_chunk_order(index: SearchIndex) -> None:
    count = OPENSEARCH_PAGE + 5
    order = [(i * 7) % count for i in range(count)]  # indexed out of order
    put(
        index,
        *(doc("alpha", "e", f"alpha chunk {i}", i) for i in order),
        doc("alpha", "other", "another entity"),
        doc("beta", "e", "beta's entity with the same id"),
    )
    put(
        index,
        doc("alpha", "mem", "live part", 0, result_type="memory", expires_at=NOW + 60),
        doc("alpha", "mem", "live part two", 1, result_type="memory", expires_at=NOW + 120),
    )
    chunks = index.entity_chunks("alpha", "e", NOW)
    assert [c.chunk_index for c in chunks] == list(range(count))
    assert {(c.team, c.entity_id) for c in chunks} == {("alpha", "e")}
    assert chunks[3].text == "alpha chunk 3"
    assert [c.text for c in index.entity_chunks("alpha", "mem", NOW + 90)] == ["live part two"]
    assert index.entity_chunks("alpha", "mem", NOW + 120) == []
    assert index.entity_chunks("gamma", "e", NOW) == []


def test_entity_ids_lists_every_document_however_many(index: SearchIndex) -> None:
    names = {f"d{i:03d}" for i in range(2 * OPENSEARCH_PAGE + 5)}
    put(index, *(doc("alpha", name, f"text {name}") for name in sorted(names)))
    put(index, doc("beta", "d999", "another team"))
    assert index.entity_ids("alpha") == names
    assert index.entity_ids("alpha", "obsidian") == set()
    assert index.entity_ids("gamma") == set()


def test_reindexing_many_entities_at_once_replaces_every_old_chunk(index: SearchIndex) -> None:
    entities = [f"e{i:02d}" for i in range(OPENSEARCH_PAGE)]
    put(index, *(doc("alpha", e, f"old {e} part {i} zebra", i) for e in entities for i in range(3)))
    put(index, *(doc("alpha", e, f"new {e} giraffe") for e in entities))
    assert ask(index, "zebra", mode="bm25") == []
    for e in entities:
        assert [c.text for c in index.entity_chunks("alpha", e, NOW)] == [f"new {e} giraffe"]


def test_the_index_survives_a_restart(reopen: Callable[[], SearchIndex]) -> None:
    # Embedded: the SQLite file is reopened. OpenSearch: a new adapter (a new Lambda
    # container) on the same cluster, whose ensure_index must keep the existing index.
    first = reopen()
    put(first, doc("alpha", "kept", "durable knowledge about backups"))
    reopened = reopen()
    assert ask(reopened, "backups") == ["kept"]
    assert ask(reopened, "backups", mode="vector") == ["kept"]


def test_concurrent_writers_and_readers_do_not_interfere(index: SearchIndex) -> None:
    # On OpenSearch the server serialises writes (the fake with a lock); what this checks there
    # is that the adapter keeps no per-call state that threads could share.
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


# Embedded only: OpenSearch has no index file or schema version. Its mapping is created by
# ensure_index, and test_opensearch_adapter.py pins it to recorded DSL.
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


# ---------------------------------------------------------------- no ranking side channel


def scored(index: SearchIndex, text: str, team: str, mode: SearchMode) -> list[tuple[str, float]]:
    return [(g.entity_id, g.score) for g in index.query(query(text, team, mode)).groups]


@pytest.mark.parametrize("mode", MODES)
def test_another_teams_documents_do_not_move_a_teams_ranking_or_scores(
    index: SearchIndex, mode: SearchMode
) -> None:
    # Given beta's corpus, where "banana" is rarer than "cherry" (so b1 leads for BM25)...
    put(
        index,
        doc("beta", "b1", "banana orchard notes", title="notes"),
        doc("beta", "b2", "cherry orchard notes", title="notes"),
        doc("beta", "b3", "cherry jam recipe", title="recipe"),
    )
    before = scored(index, "banana cherry notes", "beta", mode)
    # ...when alpha files forty documents full of "banana" (statistics shared across teams
    # would make "banana" common and put b2 first)...
    put(index, *(doc("alpha", f"a{i}", f"banana banana report {i}") for i in range(40)))
    # ...then beta's ranking and scores are exactly what they were.
    assert before
    assert scored(index, "banana cherry notes", "beta", mode) == before
    # And deleting alpha's documents again moves nothing either.
    for i in range(40):
        index.delete_entity("alpha", f"a{i}")
    assert scored(index, "banana cherry notes", "beta", mode) == before


def test_a_query_with_no_word_or_meaning_in_common_returns_nothing(index: SearchIndex) -> None:
    put(
        index,
        doc("alpha", "freeze", "no production deploys on friday afternoons"),
        doc("alpha", "vacuum", "postgres autovacuum runs nightly"),
    )
    assert ask(index, "capital peru") == []
    assert ask(index, "postgres autovacuum") == ["vacuum"]
