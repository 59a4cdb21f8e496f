"""`cairn mcp`: the official SDK's stdio client, launching the command as Claude Desktop would,
reaches a real `cairn serve` through it; a server that stops mid-session is a clear error."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from tests.protocol.conftest import LocalServer, free_port, start_server, stop_server

pytestmark = pytest.mark.protocol


def _params(server: LocalServer, *args: str, **env: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "shared.cli", "mcp", *args],
        env={**server.env, "CAIRN_TOKEN": server.dev_token, **env},
        cwd=str(Path.cwd()),
    )


def _run(params: StdioServerParameters, work: Any, mode: str = "auto") -> Any:
    async def main() -> Any:
        with anyio.fail_after(90):
            async with Client(stdio_client(params), mode=mode) as client:  # type: ignore[arg-type]
                return await work(client)

    return anyio.run(main)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_the_sdk_stdio_client_lists_tools_and_stores_and_reads_a_memory(
    server: LocalServer, mode: str
) -> None:
    key = f"stdio-{uuid.uuid4().hex[:8]}"

    async def work(client: Client) -> tuple[list[str], dict[str, Any]]:
        names = [tool.name for tool in (await client.list_tools()).tools]
        put = await client.call_tool("memory_put", {"key": key, "content": "through stdio"})
        assert not put.is_error, put.content
        got = await client.call_tool("memory_get", {"key": key})
        assert got.structured_content is not None
        return names, got.structured_content

    names, got = _run(_params(server, "--toolset", "all"), work, mode)

    assert {"memory_put", "memory_get", "recall"} <= set(names)
    assert got["memory"]["content"] == "through stdio"


def test_the_toolset_picks_the_url(server: LocalServer) -> None:
    async def work(client: Client) -> list[str]:
        return sorted(tool.name for tool in (await client.list_tools()).tools)

    hoard = _run(_params(server, "--toolset", "hoard"), work)

    assert "memory_put" in hoard
    assert "remember" not in hoard  # seed 002's verb: not on Hoard's surface


def test_url_names_the_server_and_the_toolset_joins_it(server: LocalServer) -> None:
    # No local server to find: the data folder is empty, the port free.
    params = _params(
        server, "--url", server.url, "--toolset", "hoard", CAIRN_DATA_DIR="/nonexistent"
    )

    async def work(client: Client) -> list[str]:
        return [tool.name for tool in (await client.list_tools()).tools]

    names = _run(params, work)

    assert "memory_put" in names
    assert "remember" not in names


def test_without_a_token_variable_the_local_server_takes_its_dev_token(
    server: LocalServer,
) -> None:
    # The protocol server is started with CAIRN_DEV_TOKEN (no dev-token file is written).
    params = _params(server, CAIRN_TOKEN="", CAIRN_DEV_TOKEN=server.dev_token)

    async def work(client: Client) -> int:
        return len((await client.list_tools()).tools)

    assert _run(params, work) > 0


def test_a_server_that_stops_mid_session_is_a_clear_error_not_a_hang(tmp_path: Path) -> None:
    own = start_server(tmp_path / "data", free_port())
    params = _params(own)
    stopped = False

    async def work(client: Client) -> str:
        nonlocal stopped
        assert (await client.list_tools()).tools
        await anyio.to_thread.run_sync(stop_server, own)
        stopped = True
        with anyio.fail_after(20):
            try:
                await client.call_tool("memory_get", {"key": "k"})
            except MCPError as exc:
                return str(exc)
        raise AssertionError("a call to a stopped server succeeded")

    try:
        message = _run(params, work)
    finally:
        if not stopped:
            stop_server(own)

    assert "did not answer" in message
    assert "./cairn serve" in message


def test_with_no_server_running_it_exits_at_once_saying_how(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "CAIRN_DATA_DIR": str(tmp_path),
        "CAIRN_PORT": str(free_port()),
        "CAIRN_TOKEN": "cairn_sk_x",
    }
    done = subprocess.run(
        [sys.executable, "-m", "shared.cli", "mcp"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )

    assert done.returncode == 2
    assert "no cairn server is running here" in done.stderr
    assert "--url" in done.stderr
    assert done.stdout == ""


def test_an_unknown_toolset_is_refused_naming_the_known_ones(server: LocalServer) -> None:
    done = server.cli("mcp", "--toolset", "memroy", check=False)

    assert done.returncode == 2
    assert "no toolset memroy" in done.stderr
    assert "core" in done.stderr
