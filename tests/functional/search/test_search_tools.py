"""The search tools end to end on moto: seed 000 shapes, scopes, isolation, deletion, expiry."""

from __future__ import annotations

from datetime import UTC, datetime

from shared.search.models import DocumentInput
from tests.functional.search.conftest import SearchHarness

LONG = "\n\n".join(
    f"## Part {i}\n" + f"Paragraph {i} talks about glaciers and moraine deposits. " * 25
    for i in range(5)
)


def add(search: SearchHarness, team: str, source_id: str, text: str, **extra: str) -> str:
    document = DocumentInput(
        source=extra.get("source", "local_files"),
        source_id=source_id,
        title=extra.get("title", source_id),
        text=text,
        uri=f"file:///{source_id}",
    )
    search.service.upsert_documents(team, [document])
    entity = next(
        e for e in search.service.documents.iter_entities(team) if e.source_id == source_id
    )
    return entity.id


def test_search_returns_seed_000_result_shapes(search: SearchHarness) -> None:
    entity_id = add(
        search, "alpha", "notes.md", "# Project Notes\nThe planning meeting discussed the roadmap."
    )
    result = search.call("search", {"query": "planning meeting", "limit": 5})
    assert set(result) == {"results", "next_cursor"}
    assert result["next_cursor"] is None
    first = result["results"][0]
    assert set(first) == {"result_type", "entity_id", "entity_title", "source", "uri", "chunks"}
    assert first["result_type"] == "entity"
    assert first["entity_id"] == entity_id
    assert first["uri"] == "file:///notes.md"
    chunk = first["chunks"][0]
    assert set(chunk) == {"chunk_id", "content", "score", "char_offset_start", "char_offset_end"}
    assert chunk["chunk_id"] == f"{entity_id}:0"
    assert 0 < chunk["score"] <= 1


def test_memory_results_carry_memory_key_and_one_chunk_for_memory_readers(
    search: SearchHarness,
) -> None:
    add(search, "alpha", "doc.md", "release freeze starts friday")
    search.service.index_memory(
        "alpha", "mem_1", "release_policy", "release freeze starts friday", ["ops"]
    )
    result = search.call("search", {"query": "release freeze", "types": ["memory"]})
    assert [r["result_type"] for r in result["results"]] == ["memory"]
    memory = result["results"][0]
    assert memory["memory_key"] == "release_policy"
    assert memory["entity_id"] == "mem_1"
    assert len(memory["chunks"]) == 1

    without_scope = search.call(
        "search", {"query": "release freeze", "types": ["entity", "memory"]}, scopes=("search",)
    )
    assert [r["result_type"] for r in without_scope["results"]] == ["entity"]
    legacy = search.call("search", {"query": "release freeze", "include_memory": False})
    assert [r["result_type"] for r in legacy["results"]] == ["entity"]


def test_expired_memories_are_never_returned(search: SearchHarness) -> None:
    now = search.clock[0]
    search.service.index_memory(
        "alpha",
        "mem_tmp",
        "k",
        "temporary vpn credentials rotate",
        [],
        expires_at=datetime.fromtimestamp(now + 60, tz=UTC),
    )
    assert search.call("search", {"query": "vpn credentials"})["results"]
    search.clock[0] = now + 61
    assert search.call("search", {"query": "vpn credentials"})["results"] == []
    assert search.call("get", {"entity_id": "mem_tmp"}) == {"entity": None}
    assert search.service.search_memories("alpha", "vpn credentials", 5) == []


def test_cursor_pages_have_no_gaps_or_repeats(search: SearchHarness) -> None:
    for i in range(12):
        add(search, "alpha", f"doc{i:02d}.md", f"shared keyword apple pear {'pear ' * i}")
    seen: list[str] = []
    cursors: list[str | None] = []
    cursor = None
    while True:
        arguments: dict[str, object] = {"query": "apple pear", "limit": 5}
        if cursor is not None:
            arguments["cursor"] = cursor
        page = search.call("search", arguments)
        seen += [r["entity_id"] for r in page["results"]]
        cursor = page["next_cursor"]
        cursors.append(cursor)
        if cursor is None:
            break
    assert cursors == ["5", "10", None]
    assert len(seen) == len(set(seen)) == 12


def test_a_malformed_cursor_names_the_field(search: SearchHarness) -> None:
    reply = search.reply("search", {"query": "x", "cursor": "abc"})
    assert reply.error is not None
    assert reply.error.field == "cursor"


def test_search_never_returns_another_teams_documents(search: SearchHarness) -> None:
    add(search, "alpha", "a.md", "secret merger plans for acme")
    beta_id = add(search, "beta", "b.md", "secret merger plans for acme")
    for team in ("alpha", "beta"):
        results = search.call("search", {"query": "secret merger acme", "limit": 100}, team=team)
        ids = {r["entity_id"] for r in results["results"]}
        assert len(ids) == 1
        for r in results["results"]:
            got = search.call("get", {"entity_id": r["entity_id"]}, team=team)
            assert got["entity"] is not None
    # beta's ids mean nothing to alpha.
    assert search.call("get", {"entity_id": beta_id}) == {"entity": None}
    assert search.call("get_chunk", {"chunk_id": f"{beta_id}:0"}) == {"chunk": None}


def test_get_returns_the_entity_with_all_chunks_or_null(search: SearchHarness) -> None:
    entity_id = add(search, "alpha", "glaciers.md", LONG, title="Glaciers")
    entity = search.call("get", {"entity_id": entity_id})["entity"]
    assert set(entity) == {
        "id",
        "title",
        "uri",
        "source",
        "source_id",
        "entity_type",
        "tags",
        "sensitivity",
        "chunks",
    }
    assert entity["title"] == "Glaciers"
    assert entity["source_id"] == "glaciers.md"
    assert len(entity["chunks"]) > 2
    assert [c["chunk_index"] for c in entity["chunks"]] == list(range(len(entity["chunks"])))
    for chunk in entity["chunks"]:
        assert LONG[chunk["char_offset_start"] : chunk["char_offset_end"]] == chunk["content"]
    assert search.call("get", {"entity_id": "does-not-exist"}) == {"entity": None}


def test_get_returns_a_memory_as_a_pseudo_entity_only_with_memory_scope(
    search: SearchHarness,
) -> None:
    search.service.index_memory("alpha", "mem_9", "prefs", "likes short answers", ["style"])
    entity = search.call("get", {"entity_id": "mem_9"})["entity"]
    assert entity["entity_type"] == "memory"
    assert entity["title"] == "prefs"
    assert entity["chunks"][0]["content"] == "likes short answers"
    assert search.call("get", {"entity_id": "mem_9"}, scopes=("get",)) == {"entity": None}
    assert search.call("get", {"entity_id": "mem_9"}, team="beta") == {"entity": None}


def test_get_chunk_includes_context_only_when_asked(search: SearchHarness) -> None:
    entity_id = add(search, "alpha", "glaciers.md", LONG, title="Glaciers")
    plain = search.call("get_chunk", {"chunk_id": f"{entity_id}:1"})["chunk"]
    assert "context" not in plain
    assert set(plain) == {
        "chunk_id",
        "content",
        "chunk_index",
        "chunk_type",
        "char_offset_start",
        "char_offset_end",
        "entity_id",
        "entity_title",
        "source",
        "uri",
    }
    assert plain["entity_title"] == "Glaciers"
    wide = search.call("get_chunk", {"chunk_id": f"{entity_id}:1", "context_chunks": 2})["chunk"]
    assert [c["chunk_index"] for c in wide["context"]["before"]] == [0]
    assert [c["chunk_index"] for c in wide["context"]["after"]] == [2, 3]
    assert set(wide["context"]["after"][0]) == {
        "chunk_id",
        "chunk_index",
        "content",
        "char_offset_start",
        "char_offset_end",
        "chunk_type",
    }
    assert search.call("get_chunk", {"chunk_id": f"{entity_id}:999"}) == {"chunk": None}
    assert search.call("get_chunk", {"chunk_id": "garbage"}) == {"chunk": None}


def test_a_deleted_document_is_gone_from_search_get_and_get_chunk(search: SearchHarness) -> None:
    entity_id = add(search, "alpha", "old.md", "obsolete deployment guide for heroku")
    assert search.service.delete_document("alpha", entity_id) is True
    assert search.call("search", {"query": "heroku deployment guide"})["results"] == []
    assert search.call("get", {"entity_id": entity_id}) == {"entity": None}
    assert search.call("get_chunk", {"chunk_id": f"{entity_id}:0"}) == {"chunk": None}


def test_embeddings_build_rebuilds_the_index_from_dynamodb(search: SearchHarness, tmp_path) -> None:  # type: ignore[no-untyped-def]
    add(search, "alpha", "a.md", "alpha document about rivers")
    add(search, "alpha", "b.md", LONG)
    add(search, "alpha", "r.md", "reference about rivers", source="references")
    add(search, "beta", "c.md", "beta document about rivers")
    expected = sum(e.chunk_count for e in search.service.documents.iter_entities("alpha"))
    # A fresh, empty index (say, a new index domain) is rebuilt from the source of truth.
    search.service = search.make_service(tmp_path / "fresh")
    assert search.call("search", {"query": "rivers"})["results"] == []
    assert search.service.rebuild("alpha") == expected
    assert {r["entity_title"] for r in search.call("search", {"query": "rivers"})["results"]} >= {
        "a.md",
        "r.md",
    }
    assert search.service.rebuild("alpha", "references") == 1
    # beta's documents stayed out of alpha's rebuild.
    assert search.call("search", {"query": "beta rivers"}, team="beta")["results"] == []


def test_embeddings_build_drops_index_entries_the_store_no_longer_has(
    search: SearchHarness,
) -> None:
    entity_id = add(search, "alpha", "a.md", "ephemeral wiki page")
    search.service.documents.mark_deleted("alpha", entity_id, "2026-01-01T00:00:00Z")
    assert search.call("search", {"query": "ephemeral wiki"})["results"]
    search.service.rebuild("alpha")  # the documents part of embeddings_build (sync group)
    assert search.call("search", {"query": "ephemeral wiki"})["results"] == []


def test_embeddings_build_reuses_cached_embeddings(search: SearchHarness, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from shared.search.embedding.cache import CachedEmbedder, SqliteEmbeddingCache

    cached = CachedEmbedder(search.embedder, SqliteEmbeddingCache(tmp_path / "cache.sqlite3"))
    search.service.embedder = cached
    add(search, "alpha", "a.md", "cache me once")
    before = len(search.embedder.embedded)
    search.service.rebuild("alpha")  # the documents part of embeddings_build (sync group)
    assert len(search.embedder.embedded) == before


def test_search_references_returns_paths_and_sections(search: SearchHarness) -> None:
    text = "# Manual\n\n## Install\nRun the installer.\n\n## Tuning\n" + (
        "Raise the HNSW ef_search parameter for recall. " * 40
    )
    add(search, "alpha", "references/opensearch.md", text, source="references", title="Manual")
    add(search, "alpha", "notes.md", "HNSW ef_search tuning notes", source="local_files")
    result = search.call("search_references", {"query": "HNSW ef_search recall", "limit": 3})
    assert len(result["results"]) == 1
    match = result["results"][0]
    assert match["path"] == "references/opensearch.md"
    assert "ef_search" in match["section"]
    assert match["section"] in text


def test_the_token_argument_is_accepted_and_ignored_but_unknown_ones_are_not(
    search: SearchHarness,
) -> None:
    assert search.reply("search", {"query": "x", "token": "cairn_sk_whatever"}).error is None
    reply = search.reply("search", {"query": "x", "bogus": 1})
    assert reply.error is not None
    assert reply.error.code == "invalid_argument"


def test_limits_outside_1_to_100_are_rejected(search: SearchHarness) -> None:
    for limit in (0, 101):
        reply = search.reply("search", {"query": "x", "limit": limit})
        assert reply.error is not None
        assert reply.error.field == "limit"
