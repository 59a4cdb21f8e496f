"""Builds the agent store on the configured storage (the one place its adapter is chosen)."""

from __future__ import annotations

from shared import runtime
from shared.config import names
from shared.orchestrator.agents.ports import AgentStore


def build_agent_store() -> AgentStore:
    """The agents of the configured storage: SQLite in the data folder, or DynamoDB."""
    if runtime.settings().storage == "sqlite":
        from shared.orchestrator.agents.sqlite import SqliteAgentStore

        return SqliteAgentStore(runtime.database())
    from shared.orchestrator.agents.adapters import DynamoAgentStore

    return DynamoAgentStore(runtime.table(names.TABLE_COORDINATION))
