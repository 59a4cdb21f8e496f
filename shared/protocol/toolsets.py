"""Toolsets as the gateway sees them: named sets of tools a connection picks by its URL.

`/mcp/<toolset>` serves one toolset, `/mcp/<a>+<b>` several, `/mcp/all` every tool the token may
call, and `/mcp` the token's own default toolsets (all it may call when it has none). A toolset
only narrows: what a connection lists and may call is the token's tools (scopes, allow-list) that
are also in the chosen toolsets. The sets themselves are data of the composition root
(`shared.app.toolsets`), handed to the gateway where it is built.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

# Serves every tool the token may call.
ALL: str = "all"
# Joins toolset names in one URL segment: `/mcp/memory+search`.
SEPARATOR: str = "+"


@dataclass(frozen=True)
class Toolset:
    """A named set of tools; `summary` says in a few words what an agent finds there."""

    name: str
    summary: str
    tools: tuple[str, ...]
    # Shown to agents as a place to go (instructions, banner); seed endpoints are not.
    listed: bool = True


class UnknownToolset(ValueError):
    """A URL naming a toolset that does not exist."""


class Toolsets:
    """The toolsets a gateway serves, and what a URL segment selects among them.

    >>> sets = Toolsets([Toolset("a", "A", ("x",)), Toolset("b", "B", ("y", "z"))])
    >>> sorted(sets.select("a+b") or ())
    ['x', 'y', 'z']
    >>> sets.select("all") is None
    True
    """

    def __init__(self, toolsets: Iterable[Toolset] = ()) -> None:
        self._sets: dict[str, Toolset] = {}
        for toolset in toolsets:
            if toolset.name in self._sets or toolset.name == ALL or SEPARATOR in toolset.name:
                raise ValueError(f"toolset name {toolset.name!r} is taken or not usable")
            self._sets[toolset.name] = toolset

    def __iter__(self) -> Iterator[Toolset]:
        return iter(self._sets.values())

    @property
    def by_name(self) -> Mapping[str, Toolset]:
        return self._sets

    def names(self) -> list[str]:
        return [*self._sets, ALL]

    def select(self, segment: str) -> frozenset[str] | None:
        """The tools `segment` (`name`, `a+b` or `all`) selects; None for all of them.

        Raises `UnknownToolset` naming what exists."""
        names = segment.split(SEPARATOR)
        if ALL in names:
            return None
        unknown = [name for name in names if name not in self._sets]
        if unknown or not segment:
            raise UnknownToolset(
                f"no toolset {', '.join(map(repr, unknown or [segment]))}; "
                f"known: {', '.join(self.names())} (join several with {SEPARATOR!r})"
            )
        return frozenset(tool for name in names for tool in self._sets[name].tools)

    def select_default(self, names: Iterable[str] | None) -> frozenset[str] | None:
        """The tools a token's default toolsets select (None: all). A name the gateway does
        not know selects nothing: a default can only narrow."""
        if names is None:
            return None
        chosen = list(names)
        if ALL in chosen:
            return None
        return frozenset(
            tool for name in chosen if name in self._sets for tool in self._sets[name].tools
        )
