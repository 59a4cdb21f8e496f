"""Builds the agent store and service on the configured storage (the one place the agent
adapter is chosen and the service built)."""

from __future__ import annotations

from shared import runtime
from shared.auth.wiring import build_token_service
from shared.config import names
from shared.orchestrator.agents.ports import AgentStore
from shared.orchestrator.agents.service import AgentService
from shared.storage.backends import Adapters

AGENT_STORE = Adapters[AgentStore].named(
    sqlite="shared.orchestrator.agents.sqlite:SqliteAgentStore",
    dynamodb="shared.orchestrator.agents.adapters:DynamoAgentStore",
    table=names.TABLE_COORDINATION,
)


def build_agent_store() -> AgentStore:
    """The agents of the configured storage: SQLite in the data folder, or DynamoDB."""
    return runtime.backend().build(AGENT_STORE)


def build_agent_service() -> AgentService:
    """The agent service on the configured agent store and the team tokens (it mints agent
    tokens)."""
    return AgentService(build_agent_store(), build_token_service(runtime.settings()))
