"""Who is calling: the identity every tool call carries, derived from the bearer token only."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

# Seed 000's scope names plus `admin`. `memory` implies `memory.read` and `memory.write`;
# `admin` implies every scope.
KNOWN_SCOPES: frozenset[str] = frozenset(
    {
        "search",
        "get",
        "memory",
        "memory.read",
        "memory.write",
        # Reviewing memory proposals (memory_review): `memory` does not imply it, `admin` does.
        "memory.review",
        "sync",
        "ingest",
        "agent.register",
        "agent.self",
        "agent.read",
        "task.create",
        "task.claim",
        "task.execute",
        "task.manage",
        "task.read",
        "artifact.write",
        "artifact.read",
        "event.write",
        "event.read",
        "cost.write",
        "cost.read",
        "workflow.create",
        "workflow.manage",
        "workflow.read",
        "handoff",
        "knowledge",
        "sessions",
        "admin",
    }
)
IMPLIED_SCOPES: dict[str, frozenset[str]] = {
    "memory": frozenset({"memory.read", "memory.write"}),
}


def expand_scopes(scopes: frozenset[str] | set[str] | tuple[str, ...]) -> frozenset[str]:
    """The scopes a token effectively holds, implications applied.

    >>> sorted(expand_scopes({"memory"}))
    ['memory', 'memory.read', 'memory.write']
    """
    effective = set(scopes)
    if "admin" in effective:
        return KNOWN_SCOPES
    for scope in scopes:
        effective |= IMPLIED_SCOPES.get(scope, frozenset())
    return frozenset(effective)


class Principal(BaseModel):
    """The authenticated caller. The agent identity of every write comes from here."""

    model_config = ConfigDict(frozen=True)

    team: str
    token_id: str
    token_name: str
    scopes: frozenset[str]
    allowed_tools: frozenset[str] | None = None
    # The seed 004 allow-list context `allowed_tools` came from (None: an explicit list or none).
    context: str | None = None
    agent_id: str | None = None
    # The token's own limits: a token it mints (agent.register) may not outlive or outpace it.
    token_expires_at: datetime | None = None
    rate_limit_per_minute: int | None = None
    # How the caller proved who it is: a team token, or an OAuth access token (whose client can
    # ask its authorization server for a missing scope: the gateway answers it with a step-up).
    auth_method: Literal["token", "oauth"] = "token"
    # The token's default toolsets: what `/mcp` serves it (None: all it may call).
    toolsets: tuple[str, ...] | None = None

    @property
    def effective_scopes(self) -> frozenset[str]:
        return expand_scopes(self.scopes)

    @property
    def actor(self) -> str:
        """The identity recorded on writes: the bound agent, else the token itself."""
        return self.agent_id or f"token:{self.token_id}"

    def has_any_scope(self, required: tuple[str, ...]) -> bool:
        return bool(self.effective_scopes & set(required))

    def may_call(self, tool_name: str, required: tuple[str, ...]) -> bool:
        """Scope and allow-list together decide whether a tool is visible and callable."""
        if self.allowed_tools is not None and tool_name not in self.allowed_tools:
            return False
        return self.has_any_scope(required)
