"""Token records and the requests that create them."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from shared.auth.contexts import ContextName
from shared.auth.principal import KNOWN_SCOPES

DEFAULT_RATE_LIMIT_PER_MINUTE = 600


class TokenRecord(BaseModel):
    """A stored team token. The secret itself is never stored, only its keyed hash."""

    model_config = ConfigDict(frozen=True)

    token_id: str
    team: str
    name: str
    scopes: tuple[str, ...]
    allowed_tools: tuple[str, ...] | None = None
    # Seed 004's allow-list context (agent, crossroads, internal): its tools are resolved per
    # request, the team's own version of the preset first (shared.auth.contexts).
    context: ContextName | None = None
    agent_id: str | None = None
    created_at: datetime
    expires_at: datetime | None = None
    rate_limit_per_minute: int = DEFAULT_RATE_LIMIT_PER_MINUTE
    revoked_at: datetime | None = None
    # The token that minted this one (`agent.register`); revoking the issuer revokes this too.
    issued_by: str | None = None
    # The toolsets `/mcp` serves this token (docs/toolsets.md); None: every tool it may call.
    # A view only: `/mcp/<toolset>` and `/mcp/all` still serve what its scopes allow.
    toolsets: tuple[str, ...] | None = None

    def is_active(self, now: datetime) -> bool:
        if self.revoked_at is not None:
            return False
        return self.expires_at is None or self.expires_at > now


class TokenRequest(BaseModel):
    """What `cairn tokens create` asks for."""

    # A misspelt field (`rate_limit=` for `rate_limit_per_minute=`) is an error naming it, not
    # a token silently issued with the default.
    model_config = ConfigDict(extra="forbid")

    team: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    name: str = Field(min_length=1, max_length=128)
    scopes: tuple[str, ...] = Field(min_length=1)
    allowed_tools: tuple[str, ...] | None = None
    context: ContextName | None = None
    agent_id: str | None = Field(default=None, min_length=1, max_length=128)
    expires_days: int | None = Field(default=None, ge=1, le=3650)
    rate_limit_per_minute: int = Field(default=DEFAULT_RATE_LIMIT_PER_MINUTE, ge=1, le=100_000)
    toolsets: tuple[str, ...] | None = None

    @field_validator("toolsets")
    @classmethod
    def _toolset_names(cls, toolsets: tuple[str, ...] | None) -> tuple[str, ...] | None:
        if toolsets is None:
            return None
        bad = [name for name in toolsets if not re.fullmatch(r"[a-z][a-z0-9-]{0,31}", name)]
        if bad or not toolsets:
            raise ValueError(
                f"toolset names are lower-case words (got {', '.join(map(repr, bad)) or 'none'})"
            )
        return tuple(dict.fromkeys(toolsets))

    @field_validator("scopes")
    @classmethod
    def _known_scopes(cls, scopes: tuple[str, ...]) -> tuple[str, ...]:
        unknown = sorted(set(scopes) - KNOWN_SCOPES)
        if unknown:
            import difflib

            guesses = [
                f"{name} (did you mean {close[0]}?)" if close else name
                for name in unknown
                for close in [difflib.get_close_matches(name, KNOWN_SCOPES, n=1)]
            ]
            raise ValueError(
                f"unknown scope(s): {', '.join(guesses)}; the valid scopes are "
                f"{', '.join(sorted(KNOWN_SCOPES))}"
            )
        return tuple(dict.fromkeys(scopes))

    @model_validator(mode="after")
    def _one_allow_list(self) -> TokenRequest:
        if self.context is not None and self.allowed_tools:
            raise ValueError(
                "give either `context` (a named allow-list) or `allowed_tools`, not both"
            )
        return self


class IssuedToken(BaseModel):
    """A freshly created token: the only time the secret is ever visible."""

    secret: str
    record: TokenRecord


class Revocation(BaseModel):
    """A revoked token and the tokens revoked with it (those it issued, and theirs)."""

    record: TokenRecord
    also_revoked: tuple[TokenRecord, ...] = ()

    def to_wire(self) -> dict[str, Any]:
        """The record's fields plus `also_revoked`: the ids revoked with it."""
        return {
            **self.record.model_dump(mode="json"),
            "also_revoked": [r.token_id for r in self.also_revoked],
        }
