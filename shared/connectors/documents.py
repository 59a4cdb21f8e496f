"""From a source's file to a document: which paths count, binary detection, and Markdown's
front matter (`title`, `tags`) and `[[wikilinks]]`."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from functools import lru_cache

from shared.search.models import DocumentInput

# Folders a vault keeps for itself: Obsidian's settings and its trash.
SKIPPED_FOLDERS = frozenset({".obsidian", ".trash", ".git"})
_MARKDOWN = (".md", ".markdown")
_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)
_HEADING = re.compile(r"^#[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
_WIKILINK = re.compile(r"\[\[([^\[\]|#\n]+)(?:#[^\[\]|\n]*)?(?:\|[^\[\]\n]*)?\]\]")
# How much of a file is looked at to call it binary (as git does: a NUL byte in the head).
_SNIFF_BYTES = 8000


def skipped_path(path: str) -> bool:
    """Hidden files and folders (`.obsidian/`, `.trash/`, dot files) are never read."""
    parts = path.split("/")
    return any(part.startswith(".") or part in SKIPPED_FOLDERS for part in parts)


@lru_cache(maxsize=256)
def _glob_regex(pattern: str) -> re.Pattern[str]:
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def matches(path: str, globs: Sequence[str]) -> bool:
    """Does `path` (slash-separated, relative) match one of `globs` (`**` crosses folders)?
    No globs: every path."""
    return not globs or any(_glob_regex(g.lstrip("/")).match(path) for g in globs)


def is_binary(data: bytes) -> bool:
    """A NUL byte in the head, or bytes that are not UTF-8."""
    if b"\0" in data[:_SNIFF_BYTES]:
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def _front_matter_values(block: str) -> dict[str, str | list[str]]:
    """The simple YAML (or JSON) front matter notes carry: `key: value`, `key: [a, b]` and
    `key:` followed by `- item` lines. Anything richer is ignored, never an error."""
    stripped = block.strip()
    if stripped.startswith("{"):
        try:
            parsed = json.loads(stripped)
        except ValueError:
            return {}
        if not isinstance(parsed, dict):
            return {}
        values: dict[str, str | list[str]] = {}
        for key, value in parsed.items():
            if isinstance(value, str):
                values[key] = value
            elif isinstance(value, list):
                values[key] = [str(v) for v in value if isinstance(v, (str, int))]
        return values
    values = {}
    current: str | None = None
    for line in block.splitlines():
        item = re.match(r"^\s+-\s*(.+?)\s*$", line) or re.match(r"^-\s+(.+?)\s*$", line)
        if item and current is not None:
            existing = values.get(current)
            listed = existing if isinstance(existing, list) else []
            listed.append(_unquote(item.group(1)))
            values[current] = listed
            continue
        pair = re.match(r"^([A-Za-z_][\w-]*)\s*:\s*(.*?)\s*$", line)
        if not pair:
            current = None
            continue
        current, raw = pair.group(1), pair.group(2)
        if raw.startswith("[") and raw.endswith("]"):
            values[current] = [_unquote(v) for v in raw[1:-1].split(",") if v.strip()]
        elif raw:
            values[current] = _unquote(raw)
    return values


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


def wikilinks(text: str) -> list[str]:
    """The notes `[[target]]`, `[[target|alias]]` and `[[target#heading]]` link to, in order,
    once each."""
    seen: dict[str, None] = {}
    for match in _WIKILINK.finditer(text):
        seen.setdefault(match.group(1).strip(), None)
    return list(seen)


def to_document(
    source: str, path: str, text: str, *, uri: str | None, title: str | None = None
) -> DocumentInput:
    """A file's text as a document of `source` (`path` is its source_id).

    Markdown: the front matter's `title` and `tags` (a list, or words split on commas and
    spaces) become the document's; the front matter leaves the text. `[[wikilinks]]` stay in
    the text as written (`wikilinks` reads them back), so a note is found by the names it
    links to and `get` shows its links.
    """
    name = path.rsplit("/", 1)[-1]
    tags: list[str] = []
    body = text
    if name.lower().endswith(_MARKDOWN):
        if match := _FRONT_MATTER.match(text):
            header = _front_matter_values(match.group(1))
            body = text[match.end() :]
            found = header.get("title")
            if isinstance(found, str) and found:
                title = title or found
            raw_tags = header.get("tags", header.get("tag"))
            if isinstance(raw_tags, str):
                raw_tags = [t for t in re.split(r"[,\s]+", raw_tags) if t]
            if isinstance(raw_tags, list):
                tags = list(dict.fromkeys(t.lstrip("#") for t in raw_tags if t.lstrip("#")))
        if title is None and (heading := _HEADING.search(body)):
            title = heading.group(1).strip()
    stem = name.rsplit(".", 1)[0] if "." in name else name
    return DocumentInput(
        source=source,
        source_id=path,
        title=(title or stem)[:300],
        text=body,
        uri=uri,
        tags=tags[:50],
    )
