"""Seed 004's allow-list contexts: named presets for a token's tool allow-list.

A token created with `context` (for example `cairn tokens create --context agent`) may call the
tools its context allows, as a token with an explicit `allowed_tools` list may: `tools/list`
shows no other tool and `tools/call` refuses any other with -32002. The allow-list is resolved
on every request, so a team that changes a preset (`cairn tokens context set`) changes what its
existing tokens of that context may call at once.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

ContextName = Literal["agent", "crossroads", "internal"]
CONTEXT_NAMES: tuple[ContextName, ...] = ("agent", "crossroads", "internal")
# Seed 004: the six engram CRUD tools Hecate and Moros may call.
AGENT_TOOLS: tuple[str, ...] = (
    "engram_create",
    "engram_get",
    "engram_search",
    "engram_update",
    "engram_delete",
    "engram_list_by_type",
)
# Each preset's tools; None is every tool (internal: dev/admin only). Crossroads exposes none
# until a team adds some.
PRESETS: dict[ContextName, tuple[str, ...] | None] = {
    "agent": AGENT_TOOLS,
    "crossroads": (),
    "internal": None,
}
TOOL_NAME_PATTERN = r"^[A-Za-z][A-Za-z0-9_.-]{0,127}$"


class TeamContext(BaseModel):
    """A team's own version of a preset: its tools (None: every tool), who set it, when."""

    model_config = ConfigDict(frozen=True)

    name: ContextName
    tools: tuple[str, ...] | None
    updated_at: datetime
    updated_by: str | None = None


class ContextView(BaseModel):
    """A context as a team sees it: the preset's tools or the team's own, and which."""

    name: ContextName
    tools: list[str] | None
    source: Literal["preset", "team"]
    updated_at: datetime | None = None


class ContextRequest(BaseModel):
    """What `cairn tokens context set` asks for: a team's tools for one context."""

    model_config = ConfigDict(extra="forbid")

    team: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    name: ContextName
    # None: every tool; [] : none.
    tools: tuple[str, ...] | None = Field(default=None, max_length=500)
    all_tools: bool = False

    def chosen_tools(self) -> tuple[str, ...] | None:
        """The tools to store: None for every tool."""
        if self.all_tools:
            return None
        return tuple(dict.fromkeys(self.tools or ()))


def allowed_tools(name: ContextName, override: TeamContext | None) -> frozenset[str] | None:
    """The tools a token of context `name` may call: the team's own list, else the preset's
    (None: every tool)."""
    tools = override.tools if override is not None else PRESETS[name]
    return None if tools is None else frozenset(tools)


def unknown_tools(request: ContextRequest, known: set[str]) -> list[str]:
    """The tools `request` names that cairn does not serve (a typo would allow nothing)."""
    return sorted(set(request.tools or ()) - known)
