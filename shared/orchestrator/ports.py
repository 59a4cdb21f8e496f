"""What the task service needs to know about agents (the agent service provides it)."""

from __future__ import annotations

from typing import Protocol


class AgentDirectory(Protocol):
    def capabilities(self, team: str, agent_id: str) -> frozenset[str] | None:
        """The capabilities of a registered, active agent; None when `agent_id` is not one."""
        ...

    def max_concurrent_tasks(self, team: str, agent_id: str) -> int | None:
        """How many tasks a registered, active agent may hold at once; None when not one."""
        ...
