"""What `tools/list` costs an agent: the generated catalog within its byte budgets, with every
tool keeping an output schema the MCP SDK client can validate results against."""

from __future__ import annotations

import json
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from shared.app.groups import load_catalog
from shared.tools.catalog import ToolCatalog, generated_catalog, render
from shared.tools.schemas import input_schema, output_schema

# docs/toolsets.md: every tool at /mcp/all in at most 100 KiB.
ALL_TOOLS_BUDGET = 102_400


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> ToolCatalog:
    # The file the Lambda gateway serves, read back: what either path lists.
    path = tmp_path_factory.mktemp("catalog") / "catalog.json"
    path.write_text(render(load_catalog()))
    return generated_catalog(path)


def _listing_bytes(tools: list[dict[str, Any]]) -> int:
    # As the gateway encodes a reply: compact separators, UTF-8.
    reply = {"jsonrpc": "2.0", "id": 1, "result": {"tools": tools}}
    return len(json.dumps(reply, ensure_ascii=False, separators=(",", ":")).encode())


def test_every_tool_lists_within_100_kib(catalog: ToolCatalog) -> None:
    tools = [dict(entry.descriptor) for entry in catalog]

    assert len(tools) == 97
    assert _listing_bytes(tools) <= ALL_TOOLS_BUDGET


def test_every_tool_keeps_a_valid_output_schema_of_an_object(catalog: ToolCatalog) -> None:
    for entry in catalog:
        schema = entry.descriptor["outputSchema"]
        Draft202012Validator.check_schema(schema)
        assert schema["type"] == "object", entry.name


def test_no_listed_schema_carries_generated_titles_or_output_descriptions(
    catalog: ToolCatalog,
) -> None:
    def keywords(node: Any, named: bool = False) -> set[str]:
        if isinstance(node, list):
            return set().union(*(keywords(item) for item in node)) if node else set()
        if not isinstance(node, dict):
            return set()
        found = set() if named else set(node)
        for key, value in node.items():
            found |= keywords(value, named=not named and key in {"properties", "$defs"})
        return found

    for entry in catalog:
        assert "title" not in keywords(entry.descriptor["inputSchema"]), entry.name
        output = keywords(entry.descriptor["outputSchema"])
        assert not output & {"title", "description", "default", "$defs"}, entry.name


def test_an_optional_argument_is_its_type_and_a_nested_record_an_object() -> None:
    nested = {
        "$defs": {"Rec": {"type": "object", "properties": {"id": {"type": "string"}}}},
        "type": "object",
        "properties": {
            "one": {"anyOf": [{"$ref": "#/$defs/Rec"}, {"type": "null"}]},
            "many": {"type": "array", "items": {"$ref": "#/$defs/Rec"}},
            "when": {"anyOf": [{"type": "string", "format": "date-time"}, {"type": "null"}]},
            "kind": {"anyOf": [{"enum": ["a", "b"], "type": "string"}, {"type": "null"}]},
        },
    }

    assert output_schema(nested)["properties"] == {
        "one": {"type": ["object", "null"]},
        "many": {"type": "array", "items": {"type": "object"}},
        "when": {"type": ["string", "null"], "format": "date-time"},
        "kind": {"anyOf": [{"enum": ["a", "b"], "type": "string"}, {"type": "null"}]},
    }
    optional = {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}], "default": None}
    assert input_schema({"type": "object", "properties": {"n": optional}}) == {
        "type": "object",
        "properties": {"n": {"type": "integer", "minimum": 1}},
    }


def test_a_result_with_nulls_and_nested_records_validates_against_its_compact_schema(
    catalog: ToolCatalog,
) -> None:
    schema = catalog.get("memory_get")
    assert schema is not None
    validator = Draft202012Validator(schema.descriptor["outputSchema"])

    validator.validate({"memory": None})
    validator.validate({"memory": {"id": "mem_1", "content": "x", "history": [{"at": "now"}]}})
