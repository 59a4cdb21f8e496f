"""Orchestrator agents (seed 000, "Agent Tools"): tool inputs and outputs, and the stored record.

Seed 000 gives the input schemas and only the shape of the responses; cairn's choices where it is
silent are documented in docs/orchestrator.md ("Agents").
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from shared.auth.principal import expand_scopes
from shared.model_fields import checked_metadata, optional_text

MAX_NAME_CHARS = 100  # the token is named `agent:<name>` and token names stop at 128
MAX_FIELD_CHARS = 200
MAX_CAPABILITIES = 50
MAX_CAPABILITY_CHARS = 100
MAX_STATUS_CHARS = 64
MAX_CONCURRENT_TASKS = 100

# What an agent token holds when `agent.register` is not given `scopes`: every surface an agent
# working for the team is meant to use — run tasks (claim, execute, report, delegate), hand
# unfinished work off and pick it up, exchange artifacts and events, report cost and check its
# budget, follow workflows, use the team's memory and search. Left out: `admin`,
# `agent.register` (an agent cannot mint agents), `task.manage` (cancelling others' work),
# `workflow.create`/`workflow.manage`, `sync`/`ingest` (feeding the index is an operator's job),
# `knowledge` and `sessions`. docs/orchestrator.md ("Agent tokens") says the same.
DEFAULT_AGENT_SCOPES: tuple[str, ...] = (
    "agent.self",
    "agent.read",
    "task.claim",
    "task.execute",
    "task.read",
    "task.create",
    "handoff",
    "artifact.read",
    "artifact.write",
    "event.read",
    "event.write",
    "cost.write",
    "cost.read",
    "workflow.read",
    "memory",
    "search",
    "get",
)
# A caller may narrow the default set (implied scopes such as `memory.read` included), never widen.
GRANTABLE_AGENT_SCOPES: frozenset[str] = expand_scopes(DEFAULT_AGENT_SCOPES)

# The status of a deregistered agent; heartbeats may not claim it.
DEREGISTERED = "deregistered"
ACTIVE = "active"


class _Input(BaseModel):
    # Anything the seed does not list is refused, so a typo never passes silently.
    model_config = ConfigDict(extra="forbid")


def _unique(values: list[str]) -> list[str]:
    return list(dict.fromkeys(values))


class RegisterAgentInput(_Input):
    name: str = Field(
        min_length=1,
        max_length=MAX_NAME_CHARS,
        description="The agent's name, unique within the team (exact, case-sensitive match). "
        "Registering a name that is taken fails with 409 unless `overwrite` is true.",
    )
    agent_type: str = Field(
        min_length=1,
        max_length=MAX_FIELD_CHARS,
        description="What kind of agent this is (for example claude-code, codex, worker).",
    )
    capabilities: list[str] = Field(
        default_factory=list,
        max_length=MAX_CAPABILITIES,
        description="What the agent can do; a task's `requires_capability` must be one of these "
        "for the agent to poll or claim it.",
    )
    scopes: list[str] | None = Field(
        default=None,
        min_length=1,
        description="The scopes of the agent's token. Default: "
        + ", ".join(DEFAULT_AGENT_SCOPES)
        + ". Only a subset of these (or of what they imply) may be requested; admin and "
        "agent.register never.",
    )
    metadata: dict[str, Any] = Field(
        default_factory=dict,
        description="Free-form JSON object stored with the agent (at most 8 KB as JSON).",
    )
    max_concurrent_tasks: int = Field(
        default=1,
        ge=1,
        le=MAX_CONCURRENT_TASKS,
        description="How many tasks the agent may hold at once (1-100, default 1): task.claim "
        "refuses another while it holds this many live claims.",
    )
    default_model: str | None = optional_text(MAX_FIELD_CHARS, "The agent's model.")
    model_provider: str | None = optional_text(
        MAX_FIELD_CHARS,
        "Who serves the model (for example anthropic, openai, bedrock).",
    )
    overwrite: bool = Field(
        default=False,
        description="Replace an agent already registered under `name`: its token is revoked and "
        "a new agent id and token are issued.",
    )

    @field_validator("capabilities")
    @classmethod
    def _capabilities(cls, values: list[str]) -> list[str]:
        return _checked_capabilities(values)

    @field_validator("metadata")
    @classmethod
    def _metadata(cls, value: dict[str, Any]) -> dict[str, Any]:
        return checked_metadata(value)


def _checked_capabilities(values: list[str]) -> list[str]:
    for value in values:
        if not value.strip() or len(value) > MAX_CAPABILITY_CHARS:
            raise ValueError(
                f"each capability must be 1-{MAX_CAPABILITY_CHARS} characters and not blank "
                f"(got {value[:40]!r})"
            )
    return _unique(values)


class AgentIdInput(_Input):
    agent_id: str = Field(
        min_length=1,
        max_length=64,
        description="The agent's id (agt_…), as agent.register returned it. It must be the "
        "agent the calling token is bound to (an admin token may name any agent of its team).",
    )


class HeartbeatInput(AgentIdInput):
    status: str = Field(
        default=ACTIVE,
        min_length=1,
        max_length=MAX_STATUS_CHARS,
        description="Free-text status shown by agent.list (default active; for example busy, "
        "idle, draining). 'deregistered' is reserved: call agent.deregister.",
    )

    @field_validator("status")
    @classmethod
    def _not_reserved(cls, value: str) -> str:
        if value.strip().lower() == DEREGISTERED:
            raise ValueError(f"{DEREGISTERED!r} is reserved: call agent.deregister instead")
        return value


class CapabilitiesInput(AgentIdInput):
    capabilities: list[str] = Field(
        max_length=MAX_CAPABILITIES,
        description="The agent's new capabilities; they replace the old ones entirely.",
    )

    @field_validator("capabilities")
    @classmethod
    def _capabilities(cls, values: list[str]) -> list[str]:
        return _checked_capabilities(values)


class ListAgentsInput(_Input):
    pass


class Agent(BaseModel):
    """An agent as agent.list shows it: never its token."""

    agent_id: str
    name: str
    agent_type: str
    capabilities: list[str] = Field(default_factory=list)
    status: str
    last_heartbeat: datetime | None = None
    max_concurrent_tasks: int
    default_model: str | None = None
    model_provider: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime
    created_by: str


class AgentRecord(Agent):
    """The stored agent: what agent.list shows plus its token's id and its retirement."""

    token_id: str
    scopes: list[str]
    deregistered_at: datetime | None = None
    replaced_by: str | None = None

    @property
    def is_active(self) -> bool:
        return self.deregistered_at is None

    def public(self) -> Agent:
        return Agent.model_validate(self.model_dump(include=set(Agent.model_fields)))


class RegisterAgentOutput(BaseModel):
    agent_id: str
    name: str
    token: str = Field(description="The agent's bearer token: shown once, never again.")
    scopes: list[str]
    capabilities: list[str]


class ListAgentsOutput(BaseModel):
    agents: list[Agent]


MAX_NAMED_IDS = 500


class AgentNamesInput(_Input):
    ids: list[str] = Field(
        min_length=1,
        max_length=MAX_NAMED_IDS,
        description="Actor ids as tools return them (created_by, claimed_by, by, agent keys): "
        "an agent id (agt_…) or token:tok_….",
    )

    @field_validator("ids")
    @classmethod
    def _ids(cls, values: list[str]) -> list[str]:
        for value in values:
            if not value.strip() or len(value) > 200:
                raise ValueError(f"each id must be 1-200 characters (got {value[:40]!r})")
        return _unique(values)


class AgentNamesOutput(BaseModel):
    names: dict[str, str]


class SuccessOutput(BaseModel):
    success: bool = True
