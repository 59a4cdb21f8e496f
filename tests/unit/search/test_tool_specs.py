"""Search tool specs: scopes, annotations, schemas, output shapes and a cheap import."""

from __future__ import annotations

import subprocess
import sys

import pytest

from shared.search import service, tools
from shared.search.models import (
    ChunkOut,
    SearchChunkOut,
    SearchInput,
    SearchOutput,
    SearchResultOut,
)
from shared.tools.errors import InvalidArgument

SPECS = tools.GROUP.tools


def test_each_tool_requires_its_seed_scope() -> None:
    assert {name: spec.scopes for name, spec in SPECS.items()} == {
        "search": ("search",),
        "get": ("get",),
        "get_chunk": ("get",),
        "search_references": ("search",),
    }


def test_readers_are_read_only_and_the_builder_is_idempotent_not_destructive() -> None:
    for name in ("search", "get", "get_chunk", "search_references"):
        hints = SPECS[name].annotations
        assert hints.read_only
        assert hints.idempotent
        assert not hints.open_world
    from shared.sync.tools import GROUP as SYNC

    # embeddings_build is the sync group's (it rebuilds memories too, in the background on a
    # large team), with seed 000's sync scope.
    assert SYNC.tools["embeddings_build"].scopes == ("sync",)
    build = SYNC.tools["embeddings_build"].annotations
    assert (build.read_only, build.destructive, build.idempotent) == (False, False, True)


def test_the_search_input_schema_matches_seed_000() -> None:
    schema = SearchInput.model_json_schema(mode="validation")
    assert schema["required"] == ["query"]
    limit = schema["properties"]["limit"]
    assert (limit["default"], limit["minimum"], limit["maximum"]) == (20, 1, 100)
    assert set(schema["properties"]) == {
        "query",
        "limit",
        "cursor",
        "source",
        "types",
        "include_memory",
        "token",
    }


def test_search_references_matches_seed_002_text_and_arguments() -> None:
    spec = SPECS["search_references"]
    # Seed 002: the description is the exact text an agent receives.
    assert spec.description == (
        "Search the long-form reference documents (background material the operator filed "
        "under references/ — specs, manuals, design notes). References are deliberately NOT "
        "auto-recalled and never appear in recall results, so search here when the task needs "
        "that depth. Returns each match’s vault path + the query-relevant section."
    )
    schema = spec.input_model.model_json_schema(mode="validation")
    assert schema["required"] == ["query"]
    assert set(schema["properties"]) == {"query", "limit"}
    assert schema["additionalProperties"] is False
    limit = schema["properties"]["limit"]
    assert (limit["default"], limit["minimum"], limit["maximum"]) == (5, 1, 50)


def test_entity_results_omit_memory_key_and_memory_results_carry_it() -> None:
    chunk = SearchChunkOut(
        chunk_id="e:0", content="c", score=0.5, char_offset_start=0, char_offset_end=1
    )
    entity = SearchResultOut(
        result_type="entity", entity_id="e", entity_title="t", source="s", uri=None, chunks=[chunk]
    )
    memory = entity.model_copy(update={"result_type": "memory", "memory_key": "k"})
    dumped = SearchOutput(results=[entity, memory]).model_dump(mode="json", by_alias=True)
    assert "memory_key" not in dumped["results"][0]
    assert dumped["results"][1]["memory_key"] == "k"
    assert dumped["next_cursor"] is None


def test_a_chunk_without_context_omits_the_field() -> None:
    chunk = ChunkOut(
        chunk_id="e:0",
        content="c",
        chunk_index=0,
        chunk_type="section",
        char_offset_start=0,
        char_offset_end=1,
        entity_id="e",
        entity_title="t",
        source="s",
        uri=None,
    )
    assert "context" not in chunk.model_dump(mode="json", by_alias=True)


@pytest.mark.parametrize(("cursor", "offset"), [(None, 0), ("", 0), ("0", 0), ("20", 20)])
def test_cursors_are_offsets(cursor: str | None, offset: int) -> None:
    assert service.parse_cursor(cursor) == offset


@pytest.mark.parametrize("cursor", ["-1", "abc", "1.5", "99999999"])
def test_bad_cursors_are_refused_naming_the_field(cursor: str) -> None:
    with pytest.raises(InvalidArgument) as caught:
        service.parse_cursor(cursor)
    assert caught.value.field == "cursor"


def test_types_default_to_both_and_memory_needs_memory_read() -> None:
    plain = SearchInput(query="q")
    assert service.requested_types(plain, may_read_memory=True) == {"entity", "memory"}
    assert service.requested_types(plain, may_read_memory=False) == {"entity"}
    legacy = SearchInput(query="q", include_memory=False)
    assert service.requested_types(legacy, may_read_memory=True) == {"entity"}
    explicit = SearchInput(query="q", types=["memory"], include_memory=False)
    assert service.requested_types(explicit, may_read_memory=True) == {"memory"}


def test_importing_the_tool_specs_loads_no_heavy_modules() -> None:
    code = (
        "import sys, shared.search.tools; "
        "heavy = [m for m in ('numpy', 'tokenizers', 'safetensors', 'opensearchpy') "
        "if m in sys.modules]; print(heavy)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
