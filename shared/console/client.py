"""The console's way to cairn's tools: a JSON-RPC client of the gateway, in-process.

Every read and action of the console is a `tools/call` that the gateway handles exactly as it
handles an MCP client's: the signed-in token is authenticated and rate limited, the tool's scope
and the token's allow-list are checked, the arguments validated, the group invoked (in-process
locally, Lambda Invoke in AWS). The console never reaches a store, so it can do nothing that the
same token could not do over MCP, and it sees only that token's team.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from typing import Any

from shared.protocol.gateway import McpGateway

_ids = itertools.count(1)


class ConsoleError(Exception):
    """A call the gateway refused or a tool failed; `message` is safe to show the user."""

    def __init__(
        self, message: str, *, status: int = 400, code: str | None = None, field: str | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code
        self.field = field


class SignedOut(ConsoleError):
    """The token is missing, revoked, expired or unknown: sign in again."""


@dataclass(frozen=True)
class ToolClient:
    """Calls tools for one signed-in token, through the gateway.

    >>> client = ToolClient(gateway, secret, host="127.0.0.1:8765", base_url="http://127.0.0.1")
    >>> client.call("memory_query", {"status": ["proposed"]})["memories"]  # doctest: +SKIP
    """

    gateway: McpGateway
    secret: str
    host: str
    base_url: str

    def _rpc(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        body = json.dumps(
            {"jsonrpc": "2.0", "id": next(_ids), "method": method, "params": params}
        ).encode()
        headers = {
            "authorization": f"Bearer {self.secret}",
            "content-type": "application/json",
            "accept": "application/json",
            # The browser's Host: local mode answers loopback hosts only, here as over MCP.
            "host": self.host,
        }
        # As `/mcp/all`: the console's pages call what the token may call, whatever toolsets
        # `/mcp` serves it by default (a toolset is an agent's view, not a permission).
        reply = self.gateway.handle_post(body, headers, self.base_url, toolset="all")
        payload = reply.body or {}
        if "error" in payload:
            error = payload["error"]
            message = str(error.get("message", "request refused"))
            if reply.status == 401:
                raise SignedOut("Your token was not accepted: sign in again.", status=401)
            raise ConsoleError(message, status=reply.status if reply.status >= 400 else 400)
        result: dict[str, Any] = payload.get("result", {})
        return result

    def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """The tool's structured result; a tool failure raises `ConsoleError` with its message."""
        result = self._rpc("tools/call", {"name": tool, "arguments": arguments})
        if result.get("isError"):
            error = result.get("error") or (result.get("structuredContent") or {}).get("error", {})
            raise ConsoleError(
                str(error.get("message", "the tool failed")),
                status=int(error.get("status", 400)),
                code=error.get("code"),
                field=error.get("field"),
            )
        structured: dict[str, Any] = result.get("structuredContent", {})
        return structured

    def callable_tools(self) -> frozenset[str]:
        """What this token may call (tools/list: its scopes and allow-list), every page."""
        names: set[str] = set()
        params: dict[str, Any] = {}
        while True:
            result = self._rpc("tools/list", params)
            names.update(tool["name"] for tool in result.get("tools", []))
            cursor = result.get("nextCursor")
            if not cursor:
                return frozenset(names)
            params = {"cursor": cursor}
