"""docs/tools.md is the catalog rendered: it fails when a tool changes and the file does not."""

from __future__ import annotations

import ast
from pathlib import Path

from shared.app import docs
from shared.tools.catalog import ToolEntry
from shared.tools.reference import REGENERATE, first_sentence, render_reference

ROOT = Path(__file__).resolve().parents[2]


def entry(name: str, group: str, description: str, *, read_only: bool = True) -> ToolEntry:
    return ToolEntry(
        name=name,
        group=group,
        scopes=("memory.read", "get") if read_only else ("memory.write",),
        read_only=read_only,
        text_field=None,
        describe=lambda: {"name": name, "description": description},
    )


def test_docs_tools_md_matches_the_live_catalog() -> None:
    expected = docs.tools_reference()
    actual = docs.TOOLS_REFERENCE.read_text() if docs.TOOLS_REFERENCE.is_file() else ""
    assert actual == expected, (
        f"docs/tools.md is out of date with the tool catalog; regenerate it with `{REGENERATE}` "
        "(from the repository root) and commit the result"
    )


def test_each_group_is_a_table_of_its_tools_in_catalog_order() -> None:
    text = render_reference(
        [
            entry("memory_get", "memory", "Fetch a memory. Returns null when absent."),
            entry("search", "search", "Hybrid search (BM25 + vectors). Grouped by entity."),
            entry("memory_put", "memory", "Store a memory.\nReplaces the key.", read_only=False),
        ]
    )
    assert "cairn serves 3 tools in 2 groups." in text
    memory = text.index("## memory")
    search = text.index("## search")
    assert memory < search
    assert text.index("| `memory_get` |") < text.index("| `memory_put` |") < search
    assert "| `memory_get` | `memory.read`, `get` | yes | Fetch a memory. |" in text
    assert "| `memory_put` | `memory.write` | no | Store a memory. |" in text
    assert "| `search` | `memory.read`, `get` | yes | Hybrid search (BM25 + vectors). |" in text
    assert REGENERATE in text


def test_the_first_sentence_skips_brackets_code_and_abbreviations() -> None:
    assert first_sentence("One (a. b) two. Three.") == "One (a. b) two."
    assert first_sentence("Use `x. y` here. Then.") == "Use `x. y` here."
    assert first_sentence('Returns {"a": 1. 2} or not. Else.') == 'Returns {"a": 1. 2} or not.'
    assert first_sentence("Cron, e.g. at six. Next.") == "Cron, e.g. at six."
    assert first_sentence("No end at all") == "No end at all"
    assert first_sentence("Spread\n  over   lines. Next.") == "Spread over lines."
    assert first_sentence("Is it? Yes.") == "Is it?"


def test_a_pipe_in_a_description_does_not_break_the_table() -> None:
    text = render_reference([entry("t", "g", "Either a | b.")])
    assert "| `t` | `memory.read`, `get` | yes | Either a \\| b. |" in text


def test_the_renderer_imports_no_tool_group() -> None:
    # shared/tools/ is the bottom tool kit: the composition root (shared/app/) knows the groups.
    tree = ast.parse((ROOT / "shared" / "tools" / "reference.py").read_text())
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module)
    assert {name for name in imported if name.startswith("shared.")} == {"shared.tools.catalog"}
