"""A real `cairn serve` process on a free loopback port, shared by the protocol tests."""

from __future__ import annotations

import os
import random
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.request
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from http.cookiejar import CookieJar, DefaultCookiePolicy
from pathlib import Path
from typing import Any, TypeVar

import anyio
import httpx
import httpx2
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT

from tests.jsonrpc import tools_call

T = TypeVar("T")

DEV_TOKEN = "cairn_sk_protocol-tests-dev-token-0123456789abcdef"
# Every request these tests send is plain HTTP to 127.0.0.1, so no certificate is ever checked;
# yet each new httpx client loads the CA bundle into a fresh TLS context (40-140 ms of CPU, which
# adds up to seconds a module). The clients made here share one context, loaded once.
LOOPBACK_TLS = ssl.create_default_context()
# One HTTP client for every request the tests post by hand, on kept-alive connections: a new
# client per request cost twenty times the tool call it sent. It keeps no cookies, so no request
# sees what an earlier test's response set.
HTTP = httpx.Client(
    timeout=60, verify=LOOPBACK_TLS, cookies=CookieJar(DefaultCookiePolicy(allowed_domains=[]))
)


def mcp_http_client(headers: dict[str, str] | None = None) -> httpx2.AsyncClient:
    """The HTTP client the MCP SDK's `create_mcp_http_client` makes (its timeouts: 30 s, and
    300 s to read a held-open stream), on the shared TLS context."""
    return httpx2.AsyncClient(
        timeout=httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT),
        headers=headers,
        verify=LOOPBACK_TLS,
    )


def free_port() -> int:
    """A port nothing listens on, from this test worker's own block below the kernel's
    ephemeral range (pytest-xdist's worker `gwN` takes block N): a port released here and bound
    by a server a moment later is never handed to another worker's server, nor to an outgoing
    connection, meanwhile."""
    worker = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw"))
    first = _PORTS_FROM + worker % 12 * _PORTS_PER_WORKER
    while True:
        port = random.randrange(first, first + _PORTS_PER_WORKER)
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port


# Linux hands out 32768-60999 for port 0 and outgoing connections; test servers stay below.
_PORTS_FROM = 20000
_PORTS_PER_WORKER = 1000


@dataclass
class LocalServer:
    port: int
    data_dir: Path
    dev_token: str
    process: subprocess.Popen[str]
    # The server's console goes to a file: a pipe nobody reads fills up (one line per tool
    # call) and would block the server mid-test.
    log: Path | None = None
    log_start: int = 0
    output: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "CAIRN_PORT": str(self.port), "CAIRN_DATA_DIR": str(self.data_dir)}

    def cli(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run the `cairn` CLI against this server, as a user would."""
        return subprocess.run(
            [sys.executable, "-m", "shared.cli", *args],
            env=self.env,
            capture_output=True,
            text=True,
            check=check,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )

    def create_token(self, team: str, scopes: str, name: str = "test", *extra: str) -> str:
        """A new token's secret, through `cairn tokens create` (stdout is the secret alone)."""
        done = self.cli(
            "tokens", "create", "--team", team, "--name", name, "--scopes", scopes, *extra
        )
        return done.stdout.strip()


async def sdk_call(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """`tool` called through the MCP SDK's client: it succeeded, and its structured answer."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, (tool, result.content)
    content: dict[str, Any] | None = result.structured_content
    assert content is not None
    return content


def mcp_headers(token: str, **extra: str) -> dict[str, str]:
    """The headers of a JSON-RPC POST to /mcp with the bearer `token`, and `extra` ones."""
    return {
        "Authorization": f"Bearer {token}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        **extra,
    }


def posted_call(url: str, token: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """`tool` called with a plain HTTP POST of its JSON-RPC body, as a script would: the
    request was answered (200), and its result."""
    response = HTTP.post(url, json=tools_call(tool, arguments), headers=mcp_headers(token))
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()["result"]
    return result


def spawn_serve(
    data_dir: Path,
    port: int,
    log: Path,
    *,
    dev_token: str = DEV_TOKEN,
    log_mode: str = "a",
    start_new_session: bool = False,
) -> subprocess.Popen[str]:
    """`cairn serve` on `port` and `data_dir`, its output to `log`: a file, because a full pipe
    nobody reads would block the server's logging, and so the server."""
    env = {
        **os.environ,
        "CAIRN_PORT": str(port),
        "CAIRN_DATA_DIR": str(data_dir),
        "CAIRN_DEV_TOKEN": dev_token,
    }
    with log.open(log_mode) as sink:
        return subprocess.Popen(
            [sys.executable, "-m", "shared.cli", "serve"],
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            start_new_session=start_new_session,
        )


def wait_until_serving(
    process: subprocess.Popen[str], port: int, log: Path, kill: Callable[[], None] | None = None
) -> None:
    """Back once the server on `port` answers; raises if it exits first or is not up within
    60 s (then `kill`s it, by default `process.kill`)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"cairn serve exited: {log.read_text()}")
        try:
            with urllib.request.urlopen(
                f"http://127.0.0.1:{port}/.well-known/oauth-protected-resource", timeout=1
            ):
                return
        except OSError:
            time.sleep(0.2)
    (kill or process.kill)()
    raise RuntimeError(f"cairn serve did not start within 60 s; see {log}")


def start_server(
    data_dir: Path, port: int | None = None, dev_token: str = DEV_TOKEN
) -> LocalServer:
    port = port or free_port()
    data_dir.mkdir(parents=True, exist_ok=True)
    log = data_dir.parent / f"serve-{port}.log"
    log_start = log.stat().st_size if log.exists() else 0
    process = spawn_serve(data_dir, port, log, dev_token=dev_token)
    wait_until_serving(process, port, log)
    return LocalServer(port, data_dir, dev_token, process, log, log_start)


def stop_server(server: LocalServer) -> str:
    """Ctrl-C, as a user would; returns everything the server printed."""
    server.process.send_signal(signal.SIGINT)
    server.process.wait(timeout=30)
    if server.log is None:
        return ""
    with server.log.open("rb") as log:
        log.seek(server.log_start)
        return log.read().decode(errors="replace")


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalServer]:
    running = start_server(tmp_path_factory.mktemp("cairn-data"))
    yield running
    stop_server(running)


def with_sdk_client(
    server: LocalServer,
    work: Callable[[Client], Awaitable[T]],
    *,
    token: str | None = None,
    mode: str = "auto",
    path: str = "",
) -> T:
    """Connect the MCP SDK's client to `server` (at `path` under its MCP URL: a toolset) in
    `mode` with `token` (the dev token unless given) and run `work` with it."""

    async def main() -> T:
        bearer = token or server.dev_token
        http = mcp_http_client(headers={"Authorization": f"Bearer {bearer}"})
        async with http:
            transport = streamable_http_client(server.url + path, http_client=http)
            async with Client(transport, mode=mode) as client:
                return await work(client)

    return anyio.run(main)
