"""`cairn mcp`: MCP over stdio for clients that only launch a command, bridged to a cairn server.

Each JSON-RPC message read from stdin (one per line, as MCP's stdio transport frames them) is
POSTed to the server's MCP URL with the token in the `Authorization` header, and the answer is
written to stdout as one line. The bridge never opens the data folder's stores: it is a client
of a running server, the local one found as every CLI command finds it
(`shared.local.discovery`) or the one `--url` names.

Requests are answered concurrently (a client may send several before the first answer), each
answer written whole. When the server cannot be reached — it stopped mid-session — each
request gets a JSON-RPC error saying so at once, never a hang; a local server that comes back
(on any port) is found again at the next request.

>>> headers_for({"method": "tools/call", "params": {"name": "recall",
...     "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}})["Mcp-Name"]
'recall'
"""

from __future__ import annotations

import base64
import json
import os
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, BinaryIO

from shared.config import names

TOKEN_ENV = "CAIRN_TOKEN"
# The JSON-RPC code of "the server could not be reached or answered no JSON-RPC" (the
# implementation-defined server error range).
UNREACHABLE = -32000
_VERSION_META = "io.modelcontextprotocol/protocolVersion"
# A tool call may legitimately take long (a large team's sync waits up to 18 s for its run).
_CONNECT_SECONDS = 5.0
_ANSWER_SECONDS = 120.0


class BridgeError(Exception):
    """`cairn mcp` cannot start; the message says why and what to do."""


@dataclass
class Target:
    """Where the bridge posts: the MCP URL and, for the local server, how to find it again."""

    url: str
    token: str
    rediscover: Callable[[], str | None] | None = None


def mcp_path(toolset: str | None) -> str:
    """`/mcp`, or `/mcp/<toolset>` (`core`, `memory+search`, `all`, `hoard`, ...)."""
    return "/mcp" if not toolset else f"/mcp/{toolset}"


def check_toolset(toolset: str) -> None:
    """Exit early, naming the known toolsets, for a toolset this cairn does not know."""
    from shared.app.toolsets import TOOLSETS
    from shared.protocol.toolsets import ALL, SEPARATOR

    known = set(TOOLSETS.names()) | {ALL}
    unknown = [part for part in toolset.split(SEPARATOR) if part not in known]
    if unknown:
        raise BridgeError(
            f"--toolset: no toolset {', '.join(unknown)}; known: "
            f"{', '.join(sorted(known))} (join several with {SEPARATOR})"
        )


def resolve_target(url: str | None, toolset: str | None) -> Target:
    """The server and token `cairn mcp` uses: `--url` with `$CAIRN_TOKEN`, else the running
    local server with `$CAIRN_TOKEN`, `$CAIRN_DEV_TOKEN` or the data folder's dev token."""
    token = os.environ.get(TOKEN_ENV, "").strip()
    if url:
        if not url.startswith(("https://", "http://")):
            raise BridgeError(
                f"--url must be an http(s) MCP URL, e.g. https://host/mcp (got {url!r})"
            )
        if not token:
            raise BridgeError(f"--url needs a team token: set {TOKEN_ENV}=cairn_sk_...")
        return Target(url.rstrip("/"), token)

    from shared.local.discovery import TargetNotFound, find_local_server, looked_at
    from shared.local.layout import DEV_TOKEN_FILE, default_data_dir

    path = mcp_path(toolset)

    def local_url() -> str | None:
        try:
            server = find_local_server()
        except TargetNotFound:
            return None
        return None if server is None else f"http://127.0.0.1:{server.port}{path}"

    found = local_url()
    if found is None:
        raise BridgeError(
            f"no cairn server is running here (looked at {looked_at()}): start it with "
            "`./cairn serve` (or `make serve`), or give a server with --url URL and "
            f"{TOKEN_ENV}"
        )
    if not token:
        token = os.environ.get(names.Env.DEV_TOKEN, "").strip()
    if not token:
        kept = default_data_dir() / DEV_TOKEN_FILE
        token = kept.read_text().strip() if kept.exists() else ""
    if not token:
        raise BridgeError(
            f"no token: set {TOKEN_ENV}=cairn_sk_... (`cairn tokens create`), or let "
            f"`cairn serve` keep its dev token in {default_data_dir()}"
        )
    return Target(found, token, rediscover=local_url)


def headers_for(message: Any) -> dict[str, str]:
    """The HTTP headers a message needs on Streamable HTTP: the 2026-07-28 routing headers
    when it carries that era's `_meta` (as the SDK's HTTP transport sends them)."""
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if not isinstance(message, dict) or not isinstance(message.get("method"), str):
        return headers
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    version = meta.get(_VERSION_META) if isinstance(meta, dict) else None
    if isinstance(version, str):
        headers["MCP-Protocol-Version"] = version
        headers["Mcp-Method"] = message["method"]
        name = params.get("name") if isinstance(params, dict) else None
        if message["method"] == "tools/call" and isinstance(name, str):
            headers["Mcp-Name"] = _header_value(name)
    return headers


def _header_value(value: str) -> str:
    if value.isascii() and value.isprintable():
        return value
    return "=?base64?" + base64.b64encode(value.encode()).decode() + "?="


class Bridge:
    """Pumps JSON-RPC lines from `stdin` to the server and its answers to `stdout`."""

    def __init__(self, target: Target, stdout: BinaryIO, workers: int = 8) -> None:
        self._target = target
        self._stdout = stdout
        self._write = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="cairn-mcp")

    def run(self, stdin: BinaryIO) -> int:
        """Until stdin closes; then the answers still on their way are written, and 0."""
        try:
            for line in stdin:
                if line.strip():
                    self._pool.submit(self._relay, line)
        finally:
            self._pool.shutdown(wait=True)
        return 0

    def _relay(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            self._emit(
                {
                    "jsonrpc": "2.0",
                    "id": None,
                    "error": {
                        "code": -32700,
                        "message": ("Parse error: each stdin line must be one JSON-RPC message"),
                    },
                }
            )
            return
        request_id = message.get("id") if isinstance(message, dict) else None
        expects_answer = isinstance(message, dict) and "method" in message and "id" in message
        try:
            answer = self._post(line, headers_for(message))
        except _Unreachable as exc:
            _log(f"cairn mcp: {exc}")
            if expects_answer:
                self._emit(_error(request_id, str(exc)))
            return
        if answer is not None and expects_answer:
            self._emit(answer)

    def _post(self, body: bytes, headers: dict[str, str]) -> dict[str, Any] | None:
        try:
            return _post_once(self._target.url, self._target.token, body, headers)
        except _ConnectionFailed as exc:
            # A local server that restarted may serve on another port now: look once more.
            moved = self._target.rediscover() if self._target.rediscover else None
            if moved is None or moved == self._target.url:
                raise _Unreachable(
                    f"the cairn server at {self._target.url} did not answer ({exc.reason}): it "
                    "stopped or is unreachable; start it again (`./cairn serve`) and retry"
                ) from exc
            self._target.url = moved
            try:
                return _post_once(moved, self._target.token, body, headers)
            except _ConnectionFailed as again:
                raise _Unreachable(
                    f"the cairn server at {moved} did not answer ({again.reason})"
                ) from again

    def _emit(self, message: dict[str, Any]) -> None:
        data = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
        with self._write:
            self._stdout.write(data)
            self._stdout.flush()


class _ConnectionFailed(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _Unreachable(Exception):
    """The server could not be reached, or answered something that is not JSON-RPC."""


def _post_once(url: str, token: str, body: bytes, headers: dict[str, str]) -> dict[str, Any] | None:
    # The URL is http(s) only: checked at start (`resolve_target`), or built for 127.0.0.1.
    request = urllib.request.Request(  # noqa: S310
        url, data=body, method="POST", headers={**headers, "Authorization": f"Bearer {token}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=_ANSWER_SECONDS) as response:  # noqa: S310
            status, raw = response.status, response.read()
    except urllib.error.HTTPError as exc:
        # 4xx/5xx with a JSON-RPC error body (401, 403, 429, ...): the client's to read.
        status, raw = exc.code, exc.read()
    except (urllib.error.URLError, ConnectionError, TimeoutError) as exc:
        reason = getattr(exc, "reason", exc)
        raise _ConnectionFailed(str(reason) or type(exc).__name__) from exc
    if not raw:
        return None  # 202: a notification or a client's response, accepted
    try:
        answer = json.loads(raw)
    except ValueError as exc:
        raise _Unreachable(f"{url} answered HTTP {status} without JSON-RPC") from exc
    if not isinstance(answer, dict):
        raise _Unreachable(f"{url} answered HTTP {status} without JSON-RPC")
    return answer


def _error(request_id: Any, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": UNREACHABLE, "message": message}}


def _log(message: str) -> None:
    # stdout carries the protocol only; everything for people goes to stderr.
    print(message, file=sys.stderr, flush=True)


def run(url: str | None, toolset: str | None) -> int:
    """`cairn mcp`: 0 when the client closes stdin, 2 when the bridge cannot start."""
    try:
        if toolset:
            check_toolset(toolset)
        target = resolve_target(url, toolset)
    except BridgeError as exc:
        _log(f"cairn mcp: {exc}")
        return 2
    if url and toolset:
        target.url += mcp_path(toolset)[len("/mcp") :]
    _log(f"cairn mcp: bridging stdio to {target.url}")
    return Bridge(target, sys.stdout.buffer).run(sys.stdin.buffer)
