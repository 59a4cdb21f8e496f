"""The web console at /console: people review and curate the team's memory and watch the agents'
work, through the same tools (and scopes) as an MCP client. See docs/console.md."""

from shared.console.routes import CONSOLE_PATH, console_router

__all__ = ["CONSOLE_PATH", "console_router"]
