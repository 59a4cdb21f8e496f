"""Domain errors a tool may raise. `shared.protocol.results` maps them to MCP results.

Adapters translate SDK errors into these; nothing matches on message text.
"""

from __future__ import annotations


class ToolError(Exception):
    """A tool's own failure (bad value, business rule): becomes an `isError: true` result."""

    code = "invalid_argument"
    # The HTTP status a seed gives this failure (seed 002's 404 / 409), carried in the result.
    status: int | None = None

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


class InvalidArgument(ToolError):
    """An argument has the right type but an unacceptable value."""


class NotFound(ToolError):
    """The named item does not exist in the caller's team (seed 002's 404)."""

    code = "not_found"
    status = 404


class Conflict(ToolError):
    """A conditional write lost (seed 002's 409); `holder` says who won and since when."""

    code = "conflict"
    status = 409

    def __init__(
        self, message: str, *, field: str | None = None, holder: dict[str, object] | None = None
    ) -> None:
        super().__init__(message, field=field)
        self.holder = holder or {}
