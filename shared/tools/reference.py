"""The tool reference (`docs/tools.md`), rendered from catalog entries.

Pure: it reads `ToolEntry`s and returns Markdown, so it imports no tool group. The composition
root loads the live catalog and writes the file (`python -m shared.app.docs`);
tests/unit/test_tools_reference.py fails when the file and the catalog disagree.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from shared.tools.catalog import ToolEntry

REGENERATE: Final = "uv run --frozen python -m shared.app.docs"

# Closing brackets for the openers a sentence end is never looked for inside.
_PAIRS: Final = {"(": ")", "[": "]", "{": "}"}
# Abbreviations whose dot ends no sentence.
_ABBREVIATIONS: Final = ("e.g.", "i.e.", "etc.", "vs.")


def first_sentence(text: str) -> str:
    """The first sentence of `text`, on one line: up to the first `.`, `!` or `?` followed by a
    space (or the end) outside brackets and backticks.

    >>> first_sentence("Get a chunk (e.g. by id). Returns {\\"chunk\\": null} when absent.")
    'Get a chunk (e.g. by id).'
    """
    flat = " ".join(text.split())
    closers: list[str] = []
    in_code = False
    for i, char in enumerate(flat):
        if char == "`":
            in_code = not in_code
        elif in_code:
            continue
        elif char in _PAIRS:
            closers.append(_PAIRS[char])
        elif closers and char == closers[-1]:
            closers.pop()
        elif (
            char in ".!?"
            and not closers
            and (i + 1 == len(flat) or flat[i + 1] == " ")
            and not flat[: i + 1].endswith(_ABBREVIATIONS)
        ):
            return flat[: i + 1]
    return flat


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def render_reference(entries: Iterable[ToolEntry]) -> str:
    """`docs/tools.md` for `entries`: one table per tool group (groups and tools in catalog
    order) giving each tool's name, required scopes, whether it is read-only, and the first
    sentence of its description."""
    groups: dict[str, list[ToolEntry]] = {}
    for entry in entries:
        groups.setdefault(entry.group, []).append(entry)
    total = sum(len(tools) for tools in groups.values())
    lines = [
        "# Tool reference",
        "",
        f"<!-- Generated from the tool catalog by `{REGENERATE}`; do not edit by hand. -->",
        "",
        f"cairn serves {total} tools in {len(groups)} groups. Each row gives the scopes a token "
        "needs to call the tool, whether it only reads, and the first sentence of the "
        "description a client receives in `tools/list` (which also carries the full text and "
        "the input and output schemas). A token sees only the tools its scopes and allow-list "
        "permit. Generated from the catalog: after changing a tool, run "
        f"`{REGENERATE}` (tests/unit/test_tools_reference.py fails until you do).",
        "",
        "Groups: " + ", ".join(f"[{name}](#{name})" for name in groups) + ".",
    ]
    for name, tools in groups.items():
        lines += [
            "",
            f"## {name}",
            "",
            "| tool | scopes | read-only | what it does |",
            "|---|---|---|---|",
        ]
        for tool in tools:
            scopes = ", ".join(f"`{scope}`" for scope in tool.scopes)
            description = first_sentence(str(tool.descriptor.get("description", "")))
            read_only = "yes" if tool.read_only else "no"
            lines.append(f"| `{tool.name}` | {scopes} | {read_only} | {_cell(description)} |")
    return "\n".join(lines) + "\n"
