"""The web console at /console: people review and curate the team's memory and watch the agents'
work, through the same tools (and scopes) as an MCP client. See docs/console.md."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from shared.console.routes import CONSOLE_PATH, console_router

__all__ = ["CONSOLE_PATH", "console_router"]


def __getattr__(name: str) -> Any:
    # The routes import FastAPI: loaded when the app first needs them, not with the package (the
    # gateway's cold start imports `shared.console.oauth`, plain standard library).
    if name in __all__:
        from shared.console import routes

        return getattr(routes, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
