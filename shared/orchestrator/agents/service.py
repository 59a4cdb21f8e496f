"""The agent service: register, heartbeat, capabilities, list and deregister, within one team.

It is also the `AgentDirectory` the task service asks for an agent's capabilities.
"""

from __future__ import annotations

import contextlib
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from shared.auth.errors import UnknownToken
from shared.auth.models import TokenRequest
from shared.auth.principal import Principal
from shared.orchestrator.agents.models import (
    ACTIVE,
    DEFAULT_AGENT_SCOPES,
    GRANTABLE_AGENT_SCOPES,
    Agent,
    AgentRecord,
    RegisterAgentInput,
    RegisterAgentOutput,
)
from shared.orchestrator.agents.ports import (
    AgentChanges,
    AgentStore,
    AgentTokens,
    NameTaken,
    UnknownAgent,
)
from shared.orchestrator.ports import ActiveAgent
from shared.tools.errors import Conflict, InvalidArgument, NotFound


def new_agent_id() -> str:
    return "agt_" + secrets.token_hex(12)


@dataclass(eq=False)
class AgentService:
    """Seed 000's agent.* tools over an `AgentStore`, minting agent tokens through `tokens`.

    >>> # asked = RegisterAgentInput(name="builder-1", agent_type="codex")
    >>> # service.register(principal, asked).token  → cairn_sk_…
    """

    store: AgentStore
    tokens: AgentTokens
    clock: Callable[[], float] = time.time

    def _now(self) -> datetime:
        return datetime.fromtimestamp(self.clock(), tz=UTC)

    # --- the AgentDirectory port ---------------------------------------------------------------

    def active_agent(self, team: str, agent_id: str) -> ActiveAgent | None:
        """The capabilities and task limit of an active agent of `team`, in one read; None when
        there is no such agent."""
        agent = self.store.get(team, agent_id)
        if agent is None or not agent.is_active:
            return None
        return ActiveAgent(frozenset(agent.capabilities), agent.max_concurrent_tasks)

    # --- tools ------------------------------------------------------------------------------

    def register(self, principal: Principal, asked: RegisterAgentInput) -> RegisterAgentOutput:
        """Create an agent in the caller's team and mint its token (returned once, here).

        A taken name is a `Conflict` (409, `holder` = the existing agent) unless `overwrite`:
        then the existing agent is retired and its token revoked, and the new one gets a new id.
        """
        name = asked.name
        granted = self._granted_scopes(asked.scopes)
        existing = self.store.get_by_name(principal.team, name)
        if existing is not None and existing.is_active and not asked.overwrite:
            raise _name_conflict(name, existing.agent_id)
        agent_id = new_agent_id()
        issued = self.tokens.issue(
            TokenRequest(
                team=principal.team,
                name=f"agent:{name}",
                scopes=granted,
                agent_id=agent_id,
            ),
            issuer=principal,
        )
        agent = AgentRecord(
            agent_id=agent_id,
            name=name,
            agent_type=asked.agent_type,
            capabilities=list(dict.fromkeys(asked.capabilities or [])),
            status=ACTIVE,
            max_concurrent_tasks=asked.max_concurrent_tasks,
            default_model=asked.default_model,
            model_provider=asked.model_provider,
            metadata=asked.metadata or {},
            created_at=issued.record.created_at,
            created_by=principal.actor,
            token_id=issued.record.token_id,
            scopes=list(granted),
        )
        try:
            self.store.create(principal.team, agent, replacing=existing)
        except NameTaken as exc:
            # Another registration of the name won the race: this token must never work.
            self._revoke(issued.record.token_id)
            raise _name_conflict(name, exc.holder) from exc
        except Exception:
            self._revoke(issued.record.token_id)  # no agent, so no token either
            raise
        if existing is not None and existing.is_active:
            self._revoke(existing.token_id)
        return RegisterAgentOutput(
            agent_id=agent_id,
            name=name,
            token=issued.secret,
            scopes=list(granted),
            capabilities=agent.capabilities,
        )

    def heartbeat(self, principal: Principal, *, agent_id: str, status: str = ACTIVE) -> None:
        """Record that the agent is alive, with its free-text `status`."""
        _check_owner(principal, agent_id)
        try:
            changes = AgentChanges(status=status, last_heartbeat=self._now())
            self.store.update(principal.team, agent_id, changes)
        except UnknownAgent as exc:
            raise _not_found(agent_id) from exc

    def set_capabilities(
        self, principal: Principal, *, agent_id: str, capabilities: list[str]
    ) -> None:
        """Replace the agent's capabilities."""
        _check_owner(principal, agent_id)
        try:
            changes = AgentChanges(capabilities=list(dict.fromkeys(capabilities)))
            self.store.update(principal.team, agent_id, changes)
        except UnknownAgent as exc:
            raise _not_found(agent_id) from exc

    def list_agents(self, principal: Principal) -> list[Agent]:
        """The team's active agents, by name; never their tokens."""
        agents = [a.public() for a in self.store.iter_team(principal.team) if a.is_active]
        return sorted(agents, key=lambda a: (a.name, a.agent_id))

    def names(self, principal: Principal, ids: list[str]) -> dict[str, str]:
        """What people call the actors `ids` (as tools record them: an agent id, or
        `token:<token id>` for a token bound to no agent): a registered agent's name
        (deregistered ones too: their work outlives them), else the token's name. Two reads
        of the team, whatever the number of ids; ids of no agent or token are left out."""
        wanted = set(ids)
        agents = {a.agent_id: a.name for a in self.store.iter_team(principal.team)}
        names = {i: agents[i] for i in wanted if i in agents}
        tokens = {i.removeprefix("token:") for i in wanted if i.startswith("token:")}
        if tokens:
            for token in self.tokens.list_team(principal.team):
                if token.token_id in tokens:
                    bound = agents.get(token.agent_id or "")
                    names[f"token:{token.token_id}"] = bound or token.name
        return names

    def deregister(self, principal: Principal, *, agent_id: str) -> None:
        """Retire the agent: status `deregistered`, its name freed, its token revoked.

        Repeating it on a deregistered agent succeeds (and revokes again, harmlessly).
        """
        _check_owner(principal, agent_id)
        try:
            record = self.store.deregister(principal.team, agent_id, self._now())
        except UnknownAgent as exc:
            raise _not_found(agent_id) from exc
        self._revoke(record.token_id)

    # --- helpers ----------------------------------------------------------------------------

    def _granted_scopes(self, requested: list[str] | None) -> tuple[str, ...]:
        if requested is None:
            return DEFAULT_AGENT_SCOPES
        refused = sorted(set(requested) - GRANTABLE_AGENT_SCOPES)
        if refused:
            raise InvalidArgument(
                f"`scopes` may only narrow the agent scopes ({', '.join(DEFAULT_AGENT_SCOPES)}, "
                f"or scopes they imply); refused: {', '.join(refused)}. Omit `scopes` for the "
                "default set",
                field="scopes",
            )
        return tuple(dict.fromkeys(requested))

    def _revoke(self, token_id: str) -> None:
        # An unknown token has nothing left to revoke.
        with contextlib.suppress(UnknownToken):
            self.tokens.revoke(token_id)


def _check_owner(principal: Principal, agent_id: str) -> None:
    """An agent acts on itself only; an `admin` token may act on any agent of its team."""
    if "admin" in principal.scopes or principal.agent_id == agent_id:
        return
    bound = (
        f"this token is bound to agent {principal.agent_id!r}"
        if principal.agent_id
        else "this token is bound to no agent"
    )
    raise InvalidArgument(
        f"`agent_id` must be the calling agent: {bound} (got {agent_id!r}); use the token "
        "agent.register returned for that agent, or an admin token",
        field="agent_id",
    )


def _not_found(agent_id: str) -> NotFound:
    return NotFound(
        f"`agent_id`: no active agent with id {agent_id!r} in your team; use an id from "
        "agent.list, or agent.register a new agent",
        field="agent_id",
    )


def _name_conflict(name: str, holder: str | None) -> Conflict:
    who = f" by agent {holder}" if holder else ""
    return Conflict(
        f"`name`: an agent named {name!r} is already registered{who}; pick another name, or "
        "pass `overwrite: true` to replace it (its token is revoked)",
        field="name",
        holder={"agent_id": holder} if holder else {},
    )
