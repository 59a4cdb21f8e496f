"""The agent tools of seed 000's orchestrator: agent.register, agent.heartbeat,
agent.capabilities, agent.list and agent.deregister.

Descriptions start with seed 000's text; a sentence follows where an agent needs more to call
the tool right.
"""

from __future__ import annotations

from shared.orchestrator.agents.models import (
    AgentIdInput,
    AgentNamesInput,
    AgentNamesOutput,
    CapabilitiesInput,
    HeartbeatInput,
    ListAgentsInput,
    ListAgentsOutput,
    RegisterAgentInput,
    RegisterAgentOutput,
    SuccessOutput,
)
from shared.orchestrator.group import GROUP
from shared.orchestrator.service import Orchestrator
from shared.tools.registry import READ_ONLY, Annotations, ToolContext

REGISTER_SCOPE = "agent.register"
SELF_SCOPE = "agent.self"
READ_SCOPE = "agent.read"


@GROUP.tool(
    name="agent.register",
    title="Register an agent",
    description=(
        "Register a new agent. Returns its agent_id and a bearer token bound to it (shown "
        "once: keep it) with the agent scopes; the name must be unique in the team — a taken "
        "name is a 409 unless overwrite is true, which replaces that agent and revokes its "
        "token. Needs a registration token (scope agent.register)."
    ),
    scopes=(REGISTER_SCOPE,),
    # Each call mints a new agent and token; with overwrite it retires the existing agent.
    annotations=Annotations(read_only=False, destructive=True, idempotent=False, open_world=False),
)
def agent_register(ctx: ToolContext[Orchestrator], args: RegisterAgentInput) -> RegisterAgentOutput:
    return ctx.service.agents.register(ctx.principal, args)


@GROUP.tool(
    name="agent.heartbeat",
    title="Send an agent heartbeat",
    description=(
        "Send heartbeat for an agent. Call it periodically with your own agent_id; status is "
        "free text (default active) shown by agent.list with the heartbeat time."
    ),
    scopes=(SELF_SCOPE,),
    # Overwrites only the agent's own liveness fields; a repeat leaves the same state.
    annotations=Annotations(read_only=False, destructive=False, idempotent=True, open_world=False),
)
def agent_heartbeat(ctx: ToolContext[Orchestrator], args: HeartbeatInput) -> SuccessOutput:
    ctx.service.agents.heartbeat(ctx.principal, agent_id=args.agent_id, status=args.status)
    return SuccessOutput()


@GROUP.tool(
    name="agent.capabilities",
    title="Update agent capabilities",
    description=(
        "Update agent capabilities. The list replaces the agent's capabilities entirely; "
        "tasks whose requires_capability is not in it are no longer offered to the agent."
    ),
    scopes=(SELF_SCOPE,),
    # Destructive: the old list is replaced, not merged. Idempotent: same list, same state.
    annotations=Annotations(read_only=False, destructive=True, idempotent=True, open_world=False),
)
def agent_capabilities(ctx: ToolContext[Orchestrator], args: CapabilitiesInput) -> SuccessOutput:
    ctx.service.agents.set_capabilities(
        ctx.principal, agent_id=args.agent_id, capabilities=args.capabilities
    )
    return SuccessOutput()


@GROUP.tool(
    name="agent.list",
    title="List agents",
    description=(
        "List agents. Returns the team's registered agents (deregistered ones left out) with "
        "their capabilities, status and last heartbeat; never their tokens."
    ),
    scopes=(READ_SCOPE,),
    annotations=READ_ONLY,
)
def agent_list(ctx: ToolContext[Orchestrator], args: ListAgentsInput) -> ListAgentsOutput:
    return ListAgentsOutput(agents=ctx.service.agents.list_agents(ctx.principal))


# Whoever may read a record that names its actors may read what those actors are called.
NAMES_SCOPES = (
    READ_SCOPE,
    "memory.read",
    "task.read",
    "cost.read",
    "workflow.read",
    "handoff",
    "event.read",
    "artifact.read",
)


@GROUP.tool(
    name="agent.names",
    title="Names of agents and tokens",
    description=(
        "Names for actor ids (created_by, claimed_by, by, agent keys), in one call: a "
        "registered agent's name, else the token's name; unknown ids are left out."
    ),
    scopes=NAMES_SCOPES,
    annotations=READ_ONLY,
)
def agent_names(ctx: ToolContext[Orchestrator], args: AgentNamesInput) -> AgentNamesOutput:
    return AgentNamesOutput(names=ctx.service.agents.names(ctx.principal, args.ids))


@GROUP.tool(
    name="agent.deregister",
    title="Deregister an agent",
    description=(
        "Deregister agent. Retires your own agent_id: it leaves agent.list, its name is "
        "freed and its token stops working at once."
    ),
    scopes=(SELF_SCOPE,),
    # Destructive: the token is revoked for good. Idempotent: a repeat changes nothing more.
    annotations=Annotations(read_only=False, destructive=True, idempotent=True, open_world=False),
)
def agent_deregister(ctx: ToolContext[Orchestrator], args: AgentIdInput) -> SuccessOutput:
    ctx.service.agents.deregister(ctx.principal, agent_id=args.agent_id)
    return SuccessOutput()
