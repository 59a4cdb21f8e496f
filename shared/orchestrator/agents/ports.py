"""What the agent service needs from storage and from the token service."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from shared.auth.models import IssuedToken, Revocation, TokenRecord, TokenRequest
from shared.auth.principal import Principal
from shared.orchestrator.agents.models import AgentRecord


@dataclass(frozen=True)
class AgentChanges:
    """The fields of an agent record an update sets (None: left as it is)."""

    status: str | None = None
    last_heartbeat: datetime | None = None
    capabilities: list[str] | None = None

    def given(self) -> dict[str, Any]:
        """The fields to set, by name."""
        return {name: value for name, value in vars(self).items() if value is not None}


class AgentStore(Protocol):
    """Agents of one team at a time; a name is held by at most one active agent."""

    def get(self, team: str, agent_id: str) -> AgentRecord | None: ...

    def get_by_name(self, team: str, name: str) -> AgentRecord | None:
        """The agent the name currently points at (possibly a deregistered one)."""
        ...

    def create(
        self, team: str, agent: AgentRecord, *, replacing: AgentRecord | None = None
    ) -> None:
        """Write `agent` and take its name in one transaction.

        Without `replacing` the name must be free; with it the name must still point at
        `replacing`, which is retired (deregistered, `replaced_by` the new agent) in the same
        transaction. `NameTaken` when the name is held by someone else.
        """
        ...

    def update(self, team: str, agent_id: str, changes: AgentChanges) -> None:
        """Set the changed fields of an active agent; `UnknownAgent` when there is none."""
        ...

    def deregister(self, team: str, agent_id: str, at: datetime) -> AgentRecord:
        """Mark the agent deregistered (once: a repeat keeps the first time) and free its name.

        `UnknownAgent` when the team has no agent with that id.
        """
        ...

    def iter_team(self, team: str) -> Iterator[AgentRecord]:
        """Every agent record of the team, active or not."""
        ...


class AgentTokens(Protocol):
    """The part of `shared.auth.service.TokenService` that mints and revokes agent tokens."""

    def issue(
        self,
        request: TokenRequest,
        secret: str | None = None,
        *,
        issuer: Principal | None = None,
    ) -> IssuedToken:
        """Mint a token; with `issuer`, no longer-lived or faster than it, revoked with it."""
        ...

    def revoke(self, token_id: str) -> Revocation: ...

    def list_team(self, team: str) -> list[TokenRecord]:
        """Every token of the team, revoked ones included (for their names)."""
        ...


class UnknownAgent(Exception):
    """No (active, where the operation needs one) agent with that id in the team."""


class NameTaken(Exception):
    """Another agent holds the name; carries its id when the store could read it."""

    def __init__(self, holder: str | None) -> None:
        super().__init__("name taken")
        self.holder = holder
