"""Seed 003's common arguments: `since`, `project`, `source`, `branch` and `limit`.

The rules are the seed's, with one documented difference: a malformed `since` is refused with
an error naming the field and the accepted form, where hippo silently applies no filter.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from shared.tools.errors import InvalidArgument

SINCE_PATTERN = re.compile(r"^(\d+)([mhd])$")
_UNIT_MS = {"m": 60_000, "h": 3_600_000, "d": 86_400_000}
MAX_LIMIT = 100
# Agentic harnesses whose sessions `source="claude"` covers (seed 003: all of them).
AGENTIC_HARNESSES = ("claude-code", "codex", "cursor", "opencode")
SOURCES = ("shell", "claude", "browser", "workflow")


def parse_since(since: str, now_ms: int) -> int:
    """The earliest timestamp (epoch ms) `since` admits; 0 when empty (no filter).

    >>> parse_since("24h", 100_000_000)
    13600000
    >>> parse_since("", 5)
    0
    """
    if not since:
        return 0
    match = SINCE_PATTERN.match(since)
    if match is None:
        raise InvalidArgument(
            f"`since` must be <digits><unit> with unit m, h or d (e.g. '30m', '24h', '7d'), "
            f"or empty for no window (got {since!r})",
            field="since",
        )
    return max(0, now_ms - int(match.group(1)) * _UNIT_MS[match.group(2)])


def clamp_limit(limit: int, cap: int = MAX_LIMIT) -> int:
    """Seed 003's `_clamp_limit`: at least 1, values above `cap` silently capped."""
    return max(1, min(limit, cap))


def check_source(source: str, *, allow_all: bool = False) -> str:
    """'' (all sources) or one of seed 003's sources; `all` too where the tool has it."""
    allowed = SOURCES + (("all",) if allow_all else ())
    if source in ("", *allowed):
        return "" if source == "all" else source
    raise InvalidArgument(
        f"`source` must be one of {', '.join(repr(s) for s in allowed)} or empty for every "
        f"source (got {source!r})",
        field="source",
    )


@dataclass(frozen=True)
class Filters:
    """The AND of seed 003's filters, resolved: `since_ms` 0 and empty strings mean no filter."""

    since_ms: int = 0
    project: str = ""
    source: str = ""
    branch: str = ""

    def project_matches(self, places: Iterable[str | None]) -> bool:
        """Substring match on any cwd or git repo."""
        return not self.project or any(self.project in p for p in places if p)

    def branch_matches(self, branch: str | None) -> bool:
        return not self.branch or branch == self.branch
