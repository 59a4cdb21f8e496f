"""The OpenSearch adapter against recorded DSL: the requests it sends, the responses it parses.

No OpenSearch server runs here. A real `opensearchpy.OpenSearch` client is used with its
transport's `perform_request` replaced by a recorder that answers with fixture responses
(JSON written from the OpenSearch query DSL, k-NN and bulk API documentation). The behaviour
half — the adapter against `FakeOpenSearch` — is the contract suite (test_index_contract.py);
the last tests here check that the fake is strict enough for that suite to mean something.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from opensearchpy import OpenSearch

from shared.search.adapters import opensearch
from shared.search.adapters.opensearch import OpenSearchIndex, index_body, team_index
from shared.search.errors import IndexUnavailable
from shared.search.fusion import FusionConfig
from shared.search.models import ChunkDoc, IndexQuery, SearchFilters
from tests.unit.search.fake_opensearch import FakeOpenSearch, UnsupportedRequest

# Team alpha's index under the "cairn-chunks" prefix: each team has its own.
ALPHA_INDEX = "cairn-chunks-8ed3f6ad685b959ead7022518e1af76c"

FIXTURES = Path(__file__).parent / "fixtures" / "opensearch"


def fixture(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text())


class Recorder:
    """Stands in for the HTTP transport: records each request, replies from a queue."""

    def __init__(self, *replies: Any) -> None:
        self.replies = list(replies)
        self.requests: list[dict[str, Any]] = []

    def __call__(
        self, method: str, url: str, params: Any = None, body: Any = None, **_: Any
    ) -> Any:
        if isinstance(body, str | bytes):
            text = body.decode() if isinstance(body, bytes) else body
            lines = [json.loads(line) for line in text.splitlines() if line.strip()]
            parsed: Any = (
                lines if len(lines) != 1 or url.endswith(("_msearch", "_bulk")) else lines[0]
            )
        else:
            parsed = body
        self.requests.append({"method": method, "path": url, "body": parsed})
        return self.replies.pop(0)


def adapter(
    recorder: Recorder, serverless: bool = True, page_size: int = 10_000
) -> OpenSearchIndex:
    client = OpenSearch(hosts=[{"host": "search.example", "port": 443}], use_ssl=True)
    client.transport.perform_request = recorder  # type: ignore[method-assign]
    return OpenSearchIndex(client, "cairn-chunks", 4, serverless=serverless, page_size=page_size)


def hybrid_query(**overrides: Any) -> IndexQuery:
    fields: dict[str, Any] = {
        "text": "rollback the deployment",
        "vector": [0.5, 0.5, 0.5, 0.5],
        "filters": SearchFilters(team="alpha", now=1_800_000_000.0, source="local_files"),
        "mode": "hybrid",
        "offset": 0,
        "limit": 2,
    }
    fields.update(overrides)
    return IndexQuery(**fields)


def test_a_hybrid_query_is_one_msearch_with_a_bm25_and_a_filtered_knn_search() -> None:
    recorder = Recorder(fixture("hybrid_msearch.response.json"))
    adapter(recorder).query(hybrid_query())
    expected = fixture("hybrid_msearch.request.json")
    assert len(recorder.requests) == 1
    request = recorder.requests[0]
    assert (request["method"], request["path"]) == (expected["method"], expected["path"])
    assert request["body"] == expected["lines"]


def test_every_search_body_filters_on_the_team() -> None:
    lines = adapter(Recorder()).search_bodies(hybrid_query())
    bm25_filters = lines[1]["query"]["bool"]["filter"]
    knn_filters = lines[3]["query"]["knn"]["vector"]["filter"]["bool"]["filter"]
    assert {"term": {"team": "alpha"}} in bm25_filters
    assert {"term": {"team": "alpha"}} in knn_filters


def test_single_modes_rank_by_a_single_search() -> None:
    index = adapter(Recorder())
    bm25 = index.search_bodies(hybrid_query(mode="bm25"))
    vector = index.search_bodies(hybrid_query(mode="vector"))
    # A bm25 query still asks for the k-NN hits: their cosines score the results (the
    # ranking gives them no weight); without a query vector it is one search.
    assert len(bm25) == 4
    assert "multi_match" in bm25[1]["query"]["bool"]["must"][0]
    assert len(index.search_bodies(hybrid_query(mode="bm25", vector=None))) == 2
    assert len(vector) == 2
    assert "knn" in vector[1]["query"]


def test_responses_are_fused_by_rrf_and_grouped_by_entity() -> None:
    page = adapter(Recorder(fixture("hybrid_msearch.response.json"))).query(hybrid_query())
    # e2:0 is in both rankings; e1 has two BM25 chunks; e3 only a vector hit (next page).
    assert [g.entity_id for g in page.groups] == ["e2", "e1"]
    assert [h.chunk.chunk_id for h in page.groups[1].hits] == ["e1:0", "e1:1"]
    assert page.has_more is True
    top = page.groups[0].hits[0]
    # The score is e2:0's calibrated relevance: its cosine (k-NN score 0.93 = (1 + cos) / 2)
    # and the share of the query's words it holds ("deployment", not "rollback").
    assert top.score == pytest.approx(FusionConfig().calibration.relevance(0.86, 0.5))
    assert top.chunk.uri == "file:///notes/release.md"
    assert (top.chunk.char_offset_start, top.chunk.char_offset_end) == (0, 31)


def test_the_second_page_continues_where_the_first_ended() -> None:
    page = adapter(Recorder(fixture("hybrid_msearch.response.json"))).query(hybrid_query(offset=2))
    assert [g.entity_id for g in page.groups] == ["e3"]
    assert page.has_more is False


def test_hits_of_another_team_are_dropped_even_if_the_server_returned_them() -> None:
    response = fixture("hybrid_msearch.response.json")
    response["responses"][0]["hits"]["hits"][0]["_source"]["team"] = "beta"
    page = adapter(Recorder(response)).query(hybrid_query(limit=10))
    assert all(h.chunk.team == "alpha" for g in page.groups for h in g.hits)
    assert "e1:0" not in {h.chunk.chunk_id for g in page.groups for h in g.hits}


def test_a_failed_search_in_the_msearch_raises_index_unavailable() -> None:
    with pytest.raises(IndexUnavailable):
        adapter(Recorder(fixture("msearch_error.response.json"))).query(
            hybrid_query(mode="bm25", vector=None)
        )


def test_a_team_without_an_index_yet_finds_nothing() -> None:
    recorder = Recorder(fixture("msearch_no_index.response.json"))
    page = adapter(recorder).query(hybrid_query(mode="bm25", vector=None))
    assert page.groups == []
    assert recorder.requests[0]["path"] == f"/{ALPHA_INDEX}/_msearch"


def test_indexing_replaces_an_entitys_chunks_with_one_bulk_request() -> None:
    recorder = Recorder(True, fixture("ids.response.json"), fixture("bulk.response.json"))
    chunk = ChunkDoc(
        team="alpha",
        entity_id="e1",
        chunk_id="e1:0",
        chunk_index=0,
        text="How to roll back",
        title="Deploy runbook",
        source="local_files",
        uri="file:///notes/deploy.md",
        char_offset_start=0,
        char_offset_end=16,
    )
    adapter(recorder).index([chunk], np.full((1, 4), 0.5, dtype=np.float32))
    exists, lookup, bulk = recorder.requests
    # The team's own index: checked once per process before its first write.
    assert (exists["method"], exists["path"]) == ("HEAD", f"/{ALPHA_INDEX}")
    assert lookup["path"] == f"/{ALPHA_INDEX}/_search"
    assert lookup["body"] == {
        "_source": False,
        "query": {
            "bool": {
                "filter": [
                    {"term": {"team": "alpha"}},
                    {"terms": {"entity_id": ["e1"]}},
                ]
            }
        },
        "size": 10_000,
        "sort": [{"entity_id": "asc"}, {"chunk_index": "asc"}],
    }
    assert bulk["path"] == "/_bulk"
    assert bulk["body"] == [
        {"delete": {"_index": ALPHA_INDEX, "_id": "1%3A0%3A9"}},
        {"delete": {"_index": ALPHA_INDEX, "_id": "1%3A0%3A8"}},
        # Serverless vector collections reject caller-chosen ids: none is sent.
        {"index": {"_index": ALPHA_INDEX}},
        {
            "team": "alpha",
            "entity_id": "e1",
            "chunk_id": "e1:0",
            "chunk_index": 0,
            "chunk_type": "semantic",
            "result_type": "entity",
            "source": "local_files",
            "title": "Deploy runbook",
            "text": "How to roll back",
            "char_offset_start": 0,
            "char_offset_end": 16,
            "vector": [0.5, 0.5, 0.5, 0.5],
            "uri": "file:///notes/deploy.md",
        },
    ]


def test_a_managed_domain_gets_deterministic_ids() -> None:
    recorder = Recorder(True, {"hits": {"hits": []}}, fixture("bulk.response.json"))
    chunk = ChunkDoc("alpha", "e1", "e1:0", 0, "t", "T", "local_files")
    adapter(recorder, serverless=False).index([chunk], np.ones((1, 4), dtype=np.float32))
    header = recorder.requests[2]["body"][0]["index"]
    assert len(header["_id"]) == 40


def test_a_rejected_bulk_operation_raises_index_unavailable() -> None:
    recorder = Recorder(True, {"hits": {"hits": []}}, fixture("bulk_rejected.response.json"))
    chunk = ChunkDoc("alpha", "e1", "e1:0", 0, "t", "T", "local_files")
    with pytest.raises(IndexUnavailable):
        adapter(recorder).index([chunk], np.ones((1, 4), dtype=np.float32))


def test_entity_ids_pages_through_a_composite_aggregation() -> None:
    first, second = fixture("entity_ids.responses.json")
    recorder = Recorder(first, second)
    assert adapter(recorder).entity_ids("alpha", "local_files") == {"e1", "e2"}
    assert "after" not in recorder.requests[0]["body"]["aggs"]["entities"]["composite"]
    assert recorder.requests[1]["body"]["aggs"]["entities"]["composite"]["after"] == {
        "entity": "e2"
    }
    assert {"term": {"team": "alpha"}} in recorder.requests[0]["body"]["query"]["bool"]["filter"]


def test_the_mapping_declares_a_cosine_hnsw_vector_and_english_text() -> None:
    body = index_body(4)
    assert body == fixture("index_mapping.json")
    vector = body["mappings"]["properties"]["vector"]
    assert vector["type"] == "knn_vector"
    assert vector["dimension"] == 4
    assert vector["method"]["space_type"] == "cosinesimil"
    assert body["mappings"]["properties"]["team"] == {"type": "keyword"}


def test_ensure_index_creates_the_teams_index_only_when_missing() -> None:
    recorder = Recorder(False, {"acknowledged": True})
    recorder_head = adapter(recorder)
    # HEAD /index → 404 is reported by the client as False.
    assert recorder_head.ensure_index("alpha") is True
    assert recorder.requests[1]["method"] == "PUT"
    assert recorder.requests[1]["path"] == f"/{ALPHA_INDEX}"
    assert recorder.requests[1]["body"] == index_body(4)
    # Known from then on: no second HEAD in this process.
    assert recorder_head.ensure_index("alpha") is False
    assert len(recorder.requests) == 2


def test_each_team_has_its_own_index_name() -> None:
    assert team_index("cairn-chunks", "alpha") == ALPHA_INDEX
    assert team_index("cairn-chunks", "beta") != ALPHA_INDEX
    assert team_index("cairn-chunks", "Team With Spaces/1").islower()


def test_delete_entity_looks_up_the_entitys_chunks_then_bulk_deletes_them() -> None:
    recorder = Recorder(fixture("ids.response.json"), fixture("bulk.response.json"))
    adapter(recorder).delete_entity("alpha", "e1")
    assert recorder.requests[0]["path"] == f"/{ALPHA_INDEX}/_search"
    lookup, bulk = recorder.requests
    assert lookup["body"]["query"]["bool"]["filter"] == [
        {"term": {"team": "alpha"}},
        {"terms": {"entity_id": ["e1"]}},
    ]
    assert bulk["body"] == [
        {"delete": {"_index": ALPHA_INDEX, "_id": "1%3A0%3A9"}},
        {"delete": {"_index": ALPHA_INDEX, "_id": "1%3A0%3A8"}},
    ]


def test_delete_entity_of_an_unknown_entity_sends_no_bulk() -> None:
    recorder = Recorder({"hits": {"hits": []}})
    adapter(recorder).delete_entity("alpha", "missing")
    assert len(recorder.requests) == 1


def test_entity_chunks_filters_on_team_entity_and_expiry_in_chunk_order() -> None:
    recorder = Recorder({"hits": {"hits": []}})
    adapter(recorder).entity_chunks("alpha", "e1", 1_800_000_000.0)
    body = recorder.requests[0]["body"]
    assert body["sort"] == [{"chunk_index": "asc"}]
    assert body["_source"] == {"excludes": ["vector"]}
    filters = body["query"]["bool"]["filter"]
    assert {"term": {"team": "alpha"}} in filters
    assert {"term": {"entity_id": "e1"}} in filters
    assert {
        "bool": {
            "should": [
                {"bool": {"must_not": {"exists": {"field": "expires_at"}}}},
                {"range": {"expires_at": {"gt": 1_800_000_000.0}}},
            ],
            "minimum_should_match": 1,
        }
    } in filters


def test_a_full_page_of_hits_is_followed_by_a_search_after_request() -> None:
    def hit(index: int) -> dict[str, Any]:
        source = {"team": "alpha", "entity_id": "e1", "chunk_id": f"e1:{index}"}
        source |= {"chunk_index": index, "source": "local_files"}
        return {"_id": f"id{index}", "_score": None, "_source": source, "sort": [index]}

    recorder = Recorder({"hits": {"hits": [hit(0), hit(1)]}}, {"hits": {"hits": [hit(2)]}})
    chunks = adapter(recorder, page_size=2).entity_chunks("alpha", "e1", 0.0)
    assert [c.chunk_index for c in chunks] == [0, 1, 2]
    first, second = (r["body"] for r in recorder.requests)
    assert (first["size"], "search_after" in first) == (2, False)
    assert second["search_after"] == [1]


def test_the_page_size_is_bounded_by_the_result_window() -> None:
    with pytest.raises(ValueError, match="page_size"):
        OpenSearchIndex(FakeOpenSearch(), "cairn-chunks", 4, page_size=10_001)


# ---------------------------------------------------------------- the fake is strict


def fake_index(serverless: bool = True) -> OpenSearchIndex:
    return OpenSearchIndex(FakeOpenSearch(serverless=serverless), "cairn-chunks", 4)


def chunk(team: str, entity: str, text: str, **extra: Any) -> ChunkDoc:
    return ChunkDoc(team, entity, f"{entity}:0", 0, text, "", "local_files", **extra)


def test_a_dropped_team_filter_still_reaches_only_the_teams_own_index(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a request builder that forgets the team filter, beta's chunks still cannot crowd
    # alpha's out of the ranking (as they did in the one shared index): they are in beta's
    # own index, which alpha's query never searches.
    real = opensearch.filter_clauses
    monkeypatch.setattr(
        opensearch,
        "filter_clauses",
        lambda filters: [c for c in real(filters) if "team" not in c.get("term", {})],
    )
    index = fake_index()
    crowd = [chunk("beta", f"b{i}", "kubernetes kubernetes") for i in range(101)]
    index.index([*crowd, chunk("alpha", "a1", "kubernetes notes")], np.ones((102, 4), "float32"))
    page = index.query(hybrid_query(text="kubernetes", filters=SearchFilters("alpha", 0.0)))
    assert [g.entity_id for g in page.groups] == ["a1"]
    assert index.entity_chunks("alpha", "b1", 0.0) == []
    assert index.entity_chunks("beta", "b1", 0.0) != []


def test_through_the_fake_a_dropped_expiry_filter_is_visible(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = opensearch.filter_clauses
    monkeypatch.setattr(opensearch, "filter_clauses", lambda filters: real(filters)[:-1])
    index = fake_index()
    index.index([chunk("alpha", "m1", "wifi password", expires_at=10.0)], np.ones((1, 4), "f4"))
    page = index.query(hybrid_query(text="wifi", filters=SearchFilters("alpha", now=20.0)))
    assert [g.entity_id for g in page.groups] == ["m1"]


@pytest.mark.parametrize(
    "body",
    [
        {"query": {"match_all": {}}},
        {"query": {"term": {"team": "alpha"}}},  # scoring context
        {"query": {"bool": {"filter": [{"term": {"text": "alpha"}}]}}},  # a text field
        {"query": {"bool": {"must": [{"knn": {"vector": {"vector": [1, 0, 0, 0], "k": 1}}}]}}},
        {"query": {"multi_match": {"query": "x", "fields": ["text"], "type": "best_fields"}}},
        {"query": {"bool": {"filter": [{"term": {"nope": "x"}}]}}},  # an unmapped field
        {"query": {"bool": {"filter": []}}, "track_total_hits": True},
        {"query": {"bool": {"filter": []}}, "_source": {"includes": ["team"]}},
    ],
)
def test_the_fake_rejects_what_it_does_not_model(body: dict[str, Any]) -> None:
    client = FakeOpenSearch()
    client.indices.create(index="cairn-chunks", body=index_body(4))
    with pytest.raises(UnsupportedRequest):
        client.search(index="cairn-chunks", body=body)


def test_the_fake_rejects_unknown_parameters() -> None:
    client = FakeOpenSearch()
    with pytest.raises(UnsupportedRequest, match="refresh"):
        client.bulk(body=[], refresh=True)


def test_the_fake_refuses_a_document_outside_the_strict_mapping() -> None:
    client = FakeOpenSearch()
    client.indices.create(index="cairn-chunks", body=index_body(4))
    response = client.bulk(body=[{"index": {"_index": "cairn-chunks"}}, {"colour": "red"}])
    assert response["errors"] is True
    assert response["items"][0]["index"]["status"] == 400
    assert response["items"][0]["index"]["error"]["type"] == "strict_dynamic_mapping_exception"


def test_a_serverless_collection_refuses_caller_chosen_ids() -> None:
    managed_adapter = OpenSearchIndex(
        FakeOpenSearch(serverless=True), "cairn-chunks", 4, serverless=False
    )
    with pytest.raises(IndexUnavailable):
        managed_adapter.index([chunk("alpha", "e1", "text")], np.ones((1, 4), "float32"))
