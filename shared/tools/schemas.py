"""The JSON Schemas `tools/list` shows, cut to what a client reads.

An agent reads the whole tool list into its context, so every byte of a schema is paid for on
every connection. Measured on the 96 tools (docs/toolsets.md): pydantic's schemas were 307 KB,
70 % of it output schemas, most of that nested records (`$defs`) spelled out again in every tool
that returns them, titles derived from field names, and model docstrings written for developers.

Input schemas keep what a caller needs and the seeds give: names, types, required fields,
descriptions, enums, defaults and limits. Cut: generated titles, the `anyOf [T, null]` pydantic
writes for an optional field (the seeds' optional arguments are omitted, not null: the schema
says `T`, and the server still accepts null), and `additionalProperties: true` (the default).

Output schemas keep what the MCP SDK client validates a result against and what an agent needs
to read one: each top-level field with its type, nullability, enum and whether it is always
there. A nested record (a memory, a workflow, a task) is an object whose fields the result
itself shows; spelling its fields out again in each tool returning it was most of the bytes.
"""

from __future__ import annotations

from typing import Any

# Keywords that constrain one JSON type only: beside `"type": [T, "null"]` they ignore null.
_NOT_TYPE_SPECIFIC = frozenset({"enum", "const", "$ref", "anyOf", "allOf", "oneOf", "not"})
_NULL = {"type": "null"}
# Where a mapping's keys are names (properties, definitions), not keywords.
_NAMED = frozenset({"properties", "$defs", "patternProperties"})


def input_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` (pydantic's, validation mode) without what no caller reads.

    >>> input_schema({"title": "In", "type": "object", "properties": {"q": {
    ...     "anyOf": [{"type": "string"}, {"type": "null"}], "default": None, "title": "Q"}}})
    {'type': 'object', 'properties': {'q': {'type': 'string'}}}
    """
    result = _input_node(schema)
    assert isinstance(result, dict)
    return result


def output_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` (pydantic's, serialization mode) as its top level: fields, types, nullability.

    >>> output_schema({"$defs": {"M": {"type": "object", "properties": {"id": {"type": "string"}}}},
    ...     "type": "object", "title": "Out", "required": ["m"],
    ...     "properties": {"m": {"anyOf": [{"$ref": "#/$defs/M"}, {"type": "null"}]}}})
    {'type': 'object', 'required': ['m'], 'properties': {'m': {'type': ['object', 'null']}}}
    """
    definitions = schema.get("$defs", {})
    result = _output_node(schema, definitions, depth=0)
    assert isinstance(result, dict)
    return result


def _input_node(node: Any) -> Any:
    if isinstance(node, list):
        return [_input_node(item) for item in node]
    if not isinstance(node, dict):
        return node
    result: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title" and isinstance(value, str):
            continue
        if key == "additionalProperties" and value is True:
            continue
        if key in _NAMED and isinstance(value, dict):
            result[key] = {name: _optional(_input_node(sub)) for name, sub in value.items()}
        else:
            result[key] = _input_node(value)
    return result


def _optional(node: Any) -> Any:
    """An optional argument pydantic wrote as `anyOf [T, null]` with `default: null`, as `T`."""
    if not isinstance(node, dict) or node.get("default", ...) is not None:
        return node
    branches = node.get("anyOf")
    if not isinstance(branches, list) or len(branches) != 2 or _NULL not in branches:
        return node
    (other,) = [branch for branch in branches if branch != _NULL]
    rest = {k: v for k, v in node.items() if k not in {"anyOf", "default"}}
    return {**other, **rest}


def _output_node(node: Any, definitions: dict[str, Any], depth: int) -> Any:
    if isinstance(node, list):
        return [_output_node(item, definitions, depth) for item in node]
    if not isinstance(node, dict):
        return node
    reference = node.get("$ref")
    if isinstance(reference, str) and reference.startswith("#/$defs/"):
        target = definitions[reference.removeprefix("#/$defs/")]
        return _output_node(target, definitions, depth)
    if depth > 0 and (node.get("type") == "object" or "properties" in node):
        # A nested record: the result shows its fields; the schema says what it is.
        return {"type": "object"}
    result: dict[str, Any] = {}
    for key, value in node.items():
        if key in {"title", "description", "default", "$defs"} or (
            key == "additionalProperties" and value is True
        ):
            continue
        if key == "properties" and isinstance(value, dict):
            result[key] = {
                name: _output_node(sub, definitions, depth + 1) for name, sub in value.items()
            }
        else:
            result[key] = _output_node(value, definitions, depth)
    return _nullable(result)


def _nullable(node: dict[str, Any]) -> dict[str, Any]:
    """`anyOf [{"type": T, ...}, null]` as `{"type": [T, "null"], ...}` (same instances)."""
    branches = node.get("anyOf")
    if not isinstance(branches, list) or len(branches) != 2 or _NULL not in branches:
        return node
    (other,) = [branch for branch in branches if branch != _NULL]
    kind = other.get("type")
    if not isinstance(kind, str) or _NOT_TYPE_SPECIFIC & other.keys():
        return node
    rest = {k: v for k, v in node.items() if k != "anyOf"}
    return {**other, "type": [kind, "null"], **rest}
