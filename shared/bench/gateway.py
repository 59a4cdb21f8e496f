"""`cairn bench gateway`: tool-call latency and throughput of the local server over HTTP.

Starts a real `cairn serve` (SQLite stores, embedded index, MiniLM) on a free loopback port with a
throw-away data folder, then drives it as an MCP client would: JSON-RPC over HTTP POST with a
bearer token. For each operation it runs `--calls` sequential requests over one keep-alive
connection and reports p50/p99 in ms; then `--clients` threads call `memory_get` for
`--seconds` and it reports requests per second. One JSON object on stdout; progress on
stderr. Only 127.0.0.1 is ever contacted.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from shared.bench.wire import answers, json_headers, tool_call, unthrottled_token

HANDOFF = (
    "## Start & intent\nx\n## Journey\nx\n## Current state\nx\n## What’s left\nx\n"
    "## Open questions\nx\n"
)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _client(headers: dict[str, str]) -> Any:
    import httpx

    return httpx.Client(headers=headers, timeout=30)


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


class _Server:
    def __init__(self, data_dir: Path) -> None:
        self.port = _free_port()
        self.token = "cairn_sk_bench-" + secrets.token_hex(16)
        env = {
            **os.environ,
            "CAIRN_PORT": str(self.port),
            "CAIRN_DATA_DIR": str(data_dir),
            "CAIRN_DEV_TOKEN": self.token,
        }
        self.process = subprocess.Popen(
            [sys.executable, "-m", "shared.cli", "serve"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if answers(self.port):
                break
            time.sleep(0.2)
        else:
            self.process.kill()
            raise RuntimeError("cairn serve did not start within 90 s")
        self.token = unthrottled_token(env, "bench")

    def stop(self) -> None:
        self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()


def run(
    calls: int = 200,
    clients: int = 8,
    seconds: float = 5.0,
    progress: bool = True,
    memories: int = 200,
) -> dict[str, Any]:
    """Serve, measure, stop; returns the figures `main` prints."""

    with tempfile.TemporaryDirectory(prefix="cairn-bench-gateway-") as tmp:
        server = _Server(Path(tmp))
        try:
            url = f"http://127.0.0.1:{server.port}/mcp"
            headers = json_headers(server.token)
            http = _client(headers)

            def rpc(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
                body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}
                response = http.post(url, content=json.dumps(body))
                response.raise_for_status()
                payload: dict[str, Any] = response.json()
                result: dict[str, Any] = payload.get("result") or {}
                if "error" in payload or result.get("isError"):
                    raise RuntimeError(f"{method} failed: {payload}")
                return result

            def tool(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
                return rpc("tools/call", {"name": name, "arguments": arguments})

            # Something to find: `memories` stored memories.
            for n in range(memories):
                tool(
                    "memory_put",
                    {
                        "key": f"fact-{n}",
                        "content": f"Fact {n}: service {n % 17} "
                        f"runs in region {n % 5} and owns queue q{n}.",
                    },
                )
            counter = iter(range(10**9))
            operations: dict[str, Callable[[], Any]] = {
                "ping": lambda: rpc("ping"),
                "tools/list": lambda: rpc("tools/list"),
                "memory_put": lambda: tool(
                    "memory_put", {"key": f"bench-{next(counter)}", "content": "a new fact"}
                ),
                "memory_get": lambda: tool("memory_get", {"key": "fact-7"}),
                "memory_search": lambda: tool(
                    "memory_search", {"query": "which region runs service 3"}
                ),
                "search": lambda: tool("search", {"query": "queue owner", "limit": 10}),
                "recall": lambda: tool("recall", {"query": "service regions"}),
                "store_handoff": lambda: tool(
                    "store_handoff", {"title": "bench", "document_md": HANDOFF}
                ),
            }
            figures: dict[str, Any] = {"calls_per_operation": calls}
            for name, operation in operations.items():
                operation()  # warm-up (first embedding, first query of a team)
                timings = []
                for _ in range(calls):
                    began = time.perf_counter()
                    operation()
                    timings.append((time.perf_counter() - began) * 1000)
                figures[name] = {
                    "p50_ms": round(_percentile(timings, 0.5), 2),
                    "p99_ms": round(_percentile(timings, 0.99), 2),
                }
                if progress:
                    print(f"{name}: {figures[name]}", file=sys.stderr, flush=True)
            figures["throughput"] = _throughput(url, headers, clients, seconds)
            http.close()
            return figures
        finally:
            server.stop()


def _throughput(url: str, headers: dict[str, str], clients: int, seconds: float) -> dict[str, Any]:

    body = json.dumps(tool_call("memory_get", {"key": "fact-7"}))
    done = [0] * clients
    errors = [0] * clients
    stop_at = time.monotonic() + seconds

    def worker(slot: int) -> None:
        with _client(headers) as http:
            while time.monotonic() < stop_at:  # bounded in time: the loop stops by itself
                response = http.post(url, content=body)
                if response.status_code == 200:
                    done[slot] += 1
                else:
                    errors[slot] += 1

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return {
        "operation": "memory_get",
        "clients": clients,
        "seconds": seconds,
        "requests_per_second": round(sum(done) / seconds, 1),
        "errors": sum(errors),
    }


def main(argv: Sequence[str] | None = None) -> int:
    """CLI: `cairn bench gateway [--calls 200] [--clients 8] [--seconds 5]`."""
    parser = argparse.ArgumentParser(prog="cairn bench gateway", description=__doc__)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args(argv)
    if args.calls < 1 or args.clients < 1 or args.seconds <= 0:
        parser.error("--calls and --clients must be at least 1 and --seconds positive")
    print(json.dumps(run(args.calls, args.clients, args.seconds)))
    return 0
