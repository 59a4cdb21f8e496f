"""What the benchmarks send a cairn server they started: one place for the request shapes."""

from __future__ import annotations

import subprocess
import sys
import urllib.request
from collections.abc import Mapping
from typing import Any


def json_headers(token: str) -> dict[str, str]:
    """The headers of a JSON MCP request with a bearer `token`."""
    return {
        "Authorization": f"Bearer {token}",
        "Accept": "application/json",
        "Content-Type": "application/json",
    }


def tool_call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The JSON-RPC body of a `tools/call` of tool `name`.

    >>> tool_call("memory_get", {"key": "k"})["params"]
    {'name': 'memory_get', 'arguments': {'key': 'k'}}
    """
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


def answers(port: int) -> bool:
    """Whether a cairn server on local `port` answers yet (its protected-resource metadata)."""
    url = f"http://127.0.0.1:{port}/.well-known/oauth-protected-resource"
    try:
        with urllib.request.urlopen(url, timeout=1):
            return True
    except OSError:
        return False


def unthrottled_token(env: Mapping[str, str], name: str) -> str:
    """A new admin token of team `local` with the highest allowed rate limit, created through
    the CLI as a user would, against the server `env` points at: the dev token's per-minute
    limit would throttle the benchmark's own load."""
    command = ["tokens", "create", "--team", "local", "--name", name, "--scopes", "admin"]
    created = subprocess.run(  # noqa: S603 - our own CLI, no shell
        [sys.executable, "-m", "shared.cli", *command, "--rate-limit", "100000"],
        env=dict(env),
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    return created.stdout.strip()
