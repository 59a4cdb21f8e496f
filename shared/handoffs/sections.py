"""Seed 002's rule for handoff documents: exactly five sections, each once.

A section is a markdown heading (outside fenced code). The five required headings must sit at one
heading level; no other heading may share that level or be shallower once the first section has
begun (a document title above them is fine), and deeper headings are free (sub-sections).
Headings match case-insensitively, with curly or straight apostrophes, `&` or `and`, and a
trailing colon ignored — agents write "What's left:" as often as "What’s left".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

REQUIRED_SECTIONS: tuple[str, ...] = (
    "Start & intent",
    "Journey",
    "Current state",
    "What’s left",
    "Open questions",
)
_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")


def _normal(title: str) -> str:
    text = title.strip().rstrip(":").strip().lower()
    text = text.replace("’", "'").replace("‘", "'").replace(" and ", " & ")
    return re.sub(r"\s+", " ", text)


_REQUIRED = {_normal(name): name for name in REQUIRED_SECTIONS}


@dataclass(frozen=True)
class Heading:
    level: int
    title: str


def headings(markdown: str) -> list[Heading]:
    """The document's ATX headings, in order, skipping fenced code blocks."""
    found: list[Heading] = []
    fence: str | None = None
    for line in markdown.splitlines():
        if match := _FENCE.match(line):
            marker = match.group(1)
            if fence is None:
                fence = marker
            elif fence == marker:
                fence = None
            continue
        if fence is None and (match := _HEADING.match(line)):
            found.append(Heading(len(match.group(1)), match.group(2).strip()))
    return found


def section_problem(markdown: str) -> str | None:
    """Why `markdown` is not a valid handoff document, or None when it is.

    >>> section_problem("## Journey\\n...")
    "is missing section(s): Start & intent, Current state, What’s left, Open questions"
    """
    found = headings(markdown)
    required = [h for h in found if _normal(h.title) in _REQUIRED]
    if not required:
        return "is missing section(s): " + ", ".join(REQUIRED_SECTIONS)
    level = required[0].level
    first = found.index(required[0])
    seen: dict[str, int] = {}
    others: list[str] = []
    for heading in found[first:]:
        if heading.level > level:
            continue  # a sub-section
        name = _REQUIRED.get(_normal(heading.title))
        if name is None or heading.level != level:
            others.append(heading.title)
        else:
            seen[name] = seen.get(name, 0) + 1
    missing = [name for name in REQUIRED_SECTIONS if name not in seen]
    if missing:
        return "is missing section(s): " + ", ".join(missing)
    repeated = [name for name, count in seen.items() if count > 1]
    if repeated:
        return "repeats section(s): " + ", ".join(repeated)
    if others:
        return "must hold exactly the five required sections; remove or demote: " + ", ".join(
            others
        )
    return None
