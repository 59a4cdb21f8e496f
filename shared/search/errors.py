"""Search's own exceptions (adapters translate SDK errors into these)."""

from __future__ import annotations

from shared.tools.errors import ToolError


class IndexUnavailable(ToolError):
    """The search index refused or failed a request; the source of truth is unaffected."""

    code = "unavailable"
