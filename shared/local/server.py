"""Run the local server: uvicorn on 127.0.0.1 around the `LocalRuntime`."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sys
import threading
from collections.abc import Generator, Iterator
from types import FrameType

import uvicorn

from shared.app.toolsets import ENDPOINTS_SHOWN
from shared.config import names
from shared.local.discovery import forget_server, record_server
from shared.local.folder_lock import FolderInUse
from shared.local.layout import default_data_dir
from shared.local.runtime import DevTokenUnusable, LocalRuntime
from shared.protocol.blocking import set_threads


def client_config(url: str, secret: str) -> dict[str, object]:
    """Claude Code's `mcpServers` entry for this server."""
    return {
        "mcpServers": {
            "cairn": {"type": "http", "url": url, "headers": {"Authorization": f"Bearer {secret}"}}
        }
    }


def _serves(toolsets: tuple[str, ...] | None) -> str:
    return f", /mcp serves this token {'+'.join(toolsets)}" if toolsets else ""


def other_endpoints(url: str, secret: str) -> str:
    """Ready `claude mcp add` lines for `/mcp/all` and each seed-shaped endpoint (one per
    client: each lists its own tools; docs/toolsets.md has every toolset)."""
    lines = ["Other endpoints, same token (add one per client; docs/toolsets.md lists all):"]
    for name, what in ENDPOINTS_SHOWN:
        lines.append(
            f"  # {what}\n  claude mcp add --transport http cairn-{name} {url}/{name} "
            f'--header "Authorization: Bearer {secret}"'
        )
    return "\n".join(lines)


def loopback_listener(port: int) -> socket.socket:
    """A TCP socket bound to 127.0.0.1:`port` (0: any free port) for uvicorn to serve on.

    proto=IPPROTO_TCP matters: asyncio sets TCP_NODELAY on accepted connections only for sockets
    that say they are TCP. Without it a small response's body waits behind Nagle's algorithm for
    the client's delayed ACK — about 40 ms on every keep-alive request (measured: ping 52 ms →
    9 ms).
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
    except OSError:
        sock.close()
        raise
    return sock


# glibc's mallopt parameter for the number of malloc arenas (malloc.h).
_M_ARENA_MAX = -8
MALLOC_ARENAS = 2


def cap_malloc_arenas(arenas: int = MALLOC_ARENAS) -> bool:
    """Let the C allocator keep at most `arenas` arenas (glibc on Linux; elsewhere, or when
    `MALLOC_ARENA_MAX` is set, nothing changes). Whether it was capped.

    glibc gives each thread that meets a busy arena one of its own, up to 8 per core, and
    keeps the freed memory of each. Under 30 minutes of mixed load (`cairn bench soak`) RSS
    grew 2.4 MB a minute while Python's own heap stayed flat under tracemalloc: the growth is
    native. With 2 arenas the same 30 minutes grew +10.3 % after the warm-up and levelled off
    from minute 9 (docs/benchmarks.md#soak-local).
    """
    if not sys.platform.startswith("linux") or os.environ.get("MALLOC_ARENA_MAX"):
        return False
    import ctypes

    try:
        libc = ctypes.CDLL("libc.so.6")
        return bool(libc.mallopt(_M_ARENA_MAX, arenas))
    except (OSError, AttributeError):  # not glibc (musl has no mallopt)
        return False


def serve(threads: int | None = None) -> int:
    """Start, print the URL and a ready-to-paste client config, serve until Ctrl-C.

    `threads`: tool calls using the GIL at once, plus a thread per stuck call (default
    `$CAIRN_THREADS`, else `shared.protocol.blocking.DEFAULT_THREADS`)."""
    raw_port = os.environ.get(names.Env.PORT, str(names.DEFAULT_PORT))
    if not raw_port.isdigit() or not 0 <= int(raw_port) <= 65535:
        print(f"cairn: {names.Env.PORT} must be a port number (got {raw_port!r})", file=sys.stderr)
        return 2
    port = int(raw_port)
    cap_malloc_arenas()  # before the call threads start, so they share the capped arenas
    if threads is None and (raw_threads := os.environ.get(names.Env.THREADS)):
        if not raw_threads.isdigit() or int(raw_threads) < 1:
            print(
                f"cairn: {names.Env.THREADS} must be a whole number of at least 1 "
                f"(got {raw_threads!r})",
                file=sys.stderr,
            )
            return 2
        threads = int(raw_threads)
    if threads is not None:
        set_threads(threads)
    data_dir = default_data_dir()
    local = LocalRuntime(data_dir)
    try:
        local.start()
    except FolderInUse as exc:
        # Nothing of the running server's is touched: not its lock, not its server.json.
        print(f"cairn: {exc}", file=sys.stderr)
        return 1
    try:
        try:
            dev = local.provision_dev_token(os.environ.get(names.Env.DEV_TOKEN))
        except DevTokenUnusable as exc:
            print(f"cairn: {exc}", file=sys.stderr)
            return 2
        try:
            sock = loopback_listener(port)
        except OSError as exc:
            print(f"cairn: cannot listen on 127.0.0.1:{port}: {exc}", file=sys.stderr)
            return 1
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
        # The CLI finds this server by the port recorded here (CAIRN_PORT may be 0 or unset).
        record_server(data_dir, sock.getsockname()[1])
        source = f"${names.Env.DEV_TOKEN}" if dev.from_env else f"{data_dir}/dev-token"
        print(
            f"cairn is serving {url}\n"
            f"console: {url.removesuffix('/mcp')}/console/ (sign in with the token below)\n"
            f"data folder: {data_dir}\n"
            f"token (team {dev.record.team}, all scopes, from {source}):\n  {dev.secret}\n\n"
            f"Claude Code (.mcp.json or ~/.claude.json){_serves(dev.record.toolsets)}:\n"
            f"{json.dumps(client_config(url, dev.secret), indent=2)}\n\n"
            f"{other_endpoints(url, dev.secret)}\n\n"
            "Press Ctrl-C to stop.",
            flush=True,
        )
        assert local.app is not None
        config = uvicorn.Config(local.app, log_level="warning", access_log=False, lifespan="off")
        _StoppingServer(config).run(sockets=[sock])
    finally:
        # A second Ctrl-C or a SIGTERM to the process group must not cut the final save short.
        with _signals_ignored():
            forget_server(data_dir)
            local.stop()
            print("cairn stopped; state saved.", flush=True)
    return 0


class _StoppingServer(uvicorn.Server):
    """uvicorn's server, stopped gracefully by SIGINT or SIGTERM and then returning normally.

    uvicorn shuts down gracefully on either signal (in-flight requests finish), then re-raises
    the captured signal: SIGTERM's default action kills the process before `serve` can save, and
    SIGINT becomes a `KeyboardInterrupt` that can land anywhere. Here the signal only starts the
    shutdown; `serve` then stops the runtime and exits 0.
    """

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = {sig: signal.signal(sig, self._stop) for sig in _STOP_SIGNALS}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def _stop(self, sig: int, frame: FrameType | None) -> None:
        # Like uvicorn's handle_exit, without recording the signal for a re-raise.
        if self.should_exit and sig == signal.SIGINT:
            self.force_exit = True
        else:
            self.should_exit = True


_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def _signals_ignored() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, signal.SIG_IGN) for sig in _STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
