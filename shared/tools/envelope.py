"""The small typed envelope between the gateway and a group function, and its reply."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from shared.auth.principal import Principal


class Envelope(BaseModel):
    """What the gateway sends a group: the tool, its validated arguments, who, and a request id."""

    model_config = ConfigDict(frozen=True)

    tool: str
    arguments: dict[str, Any]
    principal: Principal
    request_id: str


class ErrorInfo(BaseModel):
    """A domain error crossing the invoke boundary (never an SDK exception)."""

    code: str
    message: str
    field: str | None = None
    data: dict[str, Any] | None = None


class Reply(BaseModel):
    """A group's answer: exactly one of `result` (the tool's output model as JSON) or `error`."""

    result: dict[str, Any] | None = None
    error: ErrorInfo | None = None
