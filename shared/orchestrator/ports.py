"""What the task service needs to know about agents (the agent service provides it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class ActiveAgent:
    """What the task service needs of a registered, active agent: the capabilities a task may
    require, and how many tasks it may hold at once (None: no limit)."""

    capabilities: frozenset[str]
    max_concurrent_tasks: int | None = None


class AgentDirectory(Protocol):
    def active_agent(self, team: str, agent_id: str) -> ActiveAgent | None:
        """The registered, active agent `agent_id` of `team`, in one read; None when it is not
        one (a claim reads it once for both its capability and its task limit)."""
        ...
