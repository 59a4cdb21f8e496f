"""MCP requests as JSON-RPC bodies, for the tests that post them by hand."""

from __future__ import annotations

from typing import Any


def tools_call(tool: str, arguments: Any, request_id: int = 1) -> dict[str, Any]:
    """The body of a `tools/call` of `tool` with `arguments`."""
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }
