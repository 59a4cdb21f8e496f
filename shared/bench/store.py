"""`cairn bench store`: the storage layer under load, through a real server over HTTP.

For each size (memories and tasks in one team) it seeds a fresh data folder through the stores'
own adapters, starts a server on a free loopback port and measures, as an MCP client would
(JSON-RPC over HTTP POST, one keep-alive connection): p50 and p99 of `memory_put`, `memory_get`
by key, `recall` without a query, `task.poll`, `task.claim` and `list_handoffs`. Then `--agents`
threads, each with its own agent token, race to claim the same tasks (each agent in its own
random order) for at most `--seconds`: claims per second, lost races, and whether any task was
claimed twice.

Two backends, in the same run:
- `sqlite`: the real `cairn serve` on the embedded database (what `make serve` runs);
- `moto`: the old local path for reference — the same gateway and services on DynamoDB adapters
  over moto in one process, every call holding one lock (moto has no per-item locking), as
  `make serve` ran before the SQLite store.

One JSON object on stdout; progress on stderr. Only 127.0.0.1 is ever contacted.
"""

from __future__ import annotations

import argparse
import http.client
import importlib.util
import json
import os
import random
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from shared.bench.gateway import HANDOFF, _free_port, _percentile
from shared.bench.wire import answers, json_headers, tool_call

TEAM = "local"
HANDOFFS = 200
PEPPER_FILE = "pepper"


@dataclass(frozen=True)
class Seeded:
    """What a seeded data folder holds: the admin token's secret and the agents' secrets."""

    admin: str
    agents: list[str]


def seed(size: int, agents: int, pepper: str) -> Seeded:
    """Fill the configured stores (`shared.runtime`) with `size` memories and tasks of `TEAM`.

    Writes go through the port adapters that the server itself uses, so what is measured is
    what a user's data looks like.
    """
    from shared import runtime
    from shared.auth.models import TokenRequest
    from shared.auth.wiring import build_token_service
    from shared.handoffs.models import Handoff
    from shared.handoffs.wiring import build_handoff_store
    from shared.memory.adapters.dynamodb import DynamoMemoryStore
    from shared.memory.models import Memory
    from shared.memory.wiring import build_memory_store
    from shared.orchestrator.tasks.models import Task
    from shared.orchestrator.tasks.wiring import build_task_store

    if runtime.settings().storage == "sqlite":
        # Seeding is setup, not the measurement: skip the per-commit fsync while it runs.
        runtime.database().skip_fsync_for_setup()
    memories, tasks, handoffs = build_memory_store(), build_task_store(), build_handoff_store()
    start = datetime.now(UTC) - timedelta(days=1)
    seeded = (
        Memory(
            id=f"mem_seed{n:07d}",
            key=f"fact-{n}",
            content=f"Fact {n}: service {n % 17} runs in region {n % 5}.",
            tags=[f"t{n % 10}"],
            created_at=start + timedelta(milliseconds=n),
            updated_at=start + timedelta(milliseconds=n),
            created_by="seed",
        )
        for n in range(size)
    )
    if isinstance(memories, DynamoMemoryStore):
        # The moto reference: `create` is a transaction, and moto copies the whole table for
        # each one (minutes and gigabytes at 1,000 memories). The same items, batched.
        memories.load(TEAM, seeded)
    else:
        for memory in seeded:
            memories.create(TEAM, memory)
    for n in range(size):
        at = start + timedelta(milliseconds=n)
        tasks.create(
            TEAM,
            Task(
                id=f"tsk_seed{n:07d}",
                name=f"task {n}",
                priority=n % 3,
                created_by="seed",
                created_at=at,
                updated_at=at,
            ),
        )
    for n in range(HANDOFFS):
        handoffs.create(
            TEAM,
            Handoff(
                id=f"hof_seed{n:05d}",
                title=f"handoff {n}",
                document_md=HANDOFF,
                created_by="seed",
                created_at=start + timedelta(seconds=n),
                status="open",
            ),
        )
    tokens = build_token_service(runtime.settings().model_copy(update={"token_pepper": pepper}))

    def issue(name: str, scopes: tuple[str, ...], agent: str | None = None) -> str:
        request = TokenRequest(
            team=TEAM,
            name=name,
            scopes=scopes,
            agent_id=agent,
            rate_limit_per_minute=100_000,
        )
        return tokens.issue(request).secret

    admin = issue("bench", ("admin",))
    agent_secrets = [
        issue(f"agent-{n}", ("task.claim", "task.read"), f"bench-agent-{n}") for n in range(agents)
    ]
    return Seeded(admin, agent_secrets)


class _Process:
    """A server process on a free loopback port: `cairn serve`, or the moto reference."""

    def __init__(self, command: list[str], data_dir: Path) -> None:
        self.port = _free_port()
        env = {**os.environ, "CAIRN_PORT": str(self.port), "CAIRN_DATA_DIR": str(data_dir)}
        # The server's console goes to a file: an undrained pipe fills and blocks the server.
        self.log = data_dir / "server.log"
        with self.log.open("w") as sink:
            self.process = subprocess.Popen(  # noqa: S603 - our own interpreter and module
                command,
                env=env,
                stdout=sink,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                text=True,
            )
        deadline = time.monotonic() + 900  # the moto reference seeds inside the process
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the server exited: {self.log.read_text()[-2000:]}")
            if answers(self.port):
                return
            time.sleep(0.3)
        self.process.kill()
        raise RuntimeError("the server did not start in time")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def stop(self) -> None:
        self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()


def _caller(url: str, secret: str) -> tuple[Any, Callable[[str, dict[str, Any]], dict[str, Any]]]:
    """A keep-alive MCP client of one agent on the standard library's `http.client`.

    Not httpx: the load generator shares the machine with the server, and httpx spent 1.4 ms of
    CPU per call in the 32-thread race (http.client: 0.3 ms), CPU the server then lacked.
    """
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=30)
    headers = json_headers(secret)

    def tool(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        connection.request("POST", parts.path, json.dumps(tool_call(name, arguments)), headers)
        response = connection.getresponse()
        data = response.read()
        if response.status != 200:
            raise RuntimeError(f"{name}: HTTP {response.status}: {data[:200]!r}")
        payload: dict[str, Any] = json.loads(data)
        if "error" in payload:
            raise RuntimeError(f"{name} failed: {payload}")
        result: dict[str, Any] = payload.get("result") or {}
        return result

    return connection, tool


def _latencies(url: str, secret: str, size: int, calls: int) -> dict[str, Any]:
    connection, tool = _caller(url, secret)
    rng = random.Random(7)  # noqa: S311 - a reproducible workload, not a secret
    counter = iter(range(10**9))
    claimable = iter(rng.sample(range(size), min(size, calls + 1)))
    operations: dict[str, Callable[[], Any]] = {
        "memory_put": lambda: tool(
            "memory_put", {"key": f"bench-{next(counter)}", "content": "a new fact"}
        ),
        "memory_get": lambda: tool("memory_get", {"key": f"fact-{rng.randrange(size)}"}),
        "recall": lambda: tool("recall", {"limit": 20}),
        "task.poll": lambda: tool("task.poll", {"limit": 20}),
        "task.claim": lambda: tool("task.claim", {"task_id": f"tsk_seed{next(claimable):07d}"}),
        "list_handoffs": lambda: tool("list_handoffs", {"limit": 20}),
    }
    figures: dict[str, Any] = {}
    for name, operation in operations.items():
        operation()  # warm-up
        timings = []
        for _ in range(calls):
            began = time.perf_counter()
            result = operation()
            timings.append((time.perf_counter() - began) * 1000)
            if result.get("isError"):
                raise RuntimeError(f"{name} failed: {result}")
        figures[name] = {
            "p50_ms": round(_percentile(timings, 0.5), 2),
            "p99_ms": round(_percentile(timings, 0.99), 2),
        }
    connection.close()
    return figures


def _cpu_seconds(pid: int) -> float | None:
    """User + system CPU the process `pid` has used (Linux `/proc`; None elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    # utime and stime are fields 14 and 15 of stat(5); the split starts at field 3.
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _claim_race(
    url: str, agents: list[str], size: int, calls: int, seconds: float, server_pid: int
) -> dict[str, Any]:
    """Every agent walks the same tasks (not the ones `_latencies` claimed), each in its own
    random order, as agents picking from what `task.poll` offers would: two agents often reach
    the same task, most of all as the pool runs out, and exactly one may win it."""
    pool = [f"tsk_seed{n:07d}" for n in range(size)][calls + 2 :]
    won: list[list[str]] = [[] for _ in agents]
    attempts = [0] * len(agents)
    errors = [0] * len(agents)
    barrier = threading.Barrier(len(agents))
    stop_at = [0.0]

    def agent(slot: int) -> None:
        connection, tool = _caller(url, agents[slot])
        order = list(pool)
        random.Random(slot).shuffle(order)  # noqa: S311 - a reproducible workload
        if barrier.wait() == 0:
            stop_at[0] = time.monotonic() + seconds
        barrier.wait()  # every agent sees the deadline
        for task_id in order:
            if time.monotonic() >= stop_at[0]:  # bounded in time: the loop stops by itself
                break
            attempts[slot] += 1
            try:
                result = tool("task.claim", {"task_id": task_id})
            except Exception:  # counted; the race goes on
                errors[slot] += 1
                continue
            if not result.get("isError"):
                won[slot].append(task_id)
        connection.close()

    threads = [threading.Thread(target=agent, args=(n,)) for n in range(len(agents))]
    cpu_before = _cpu_seconds(server_pid)
    for thread in threads:
        thread.start()
    began = time.perf_counter()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - began
    cpu_after = _cpu_seconds(server_pid)
    claimed = [task for tasks in won for task in tasks]
    # The server's own CPU per decided call: less sensitive than rates to other load on the
    # machine (and to the agents' client CPU, which runs in this process, not the server's).
    cpu_ms = (
        round((cpu_after - cpu_before) * 1000 / max(1, sum(attempts)), 2)
        if cpu_before is not None and cpu_after is not None
        else None
    )
    return {
        "agents": len(agents),
        "tasks": len(pool),
        "seconds": round(elapsed, 2),
        "claims": len(claimed),
        "claims_per_second": round(len(claimed) / elapsed, 1),
        # Every call is decided (won, or lost to the agent holding the task): the server's rate.
        "attempts_per_second": round(sum(attempts) / elapsed, 1),
        "lost_races": sum(attempts) - len(claimed) - sum(errors),
        "errors": sum(errors),
        "double_claims": len(claimed) - len(set(claimed)),
        "server_cpu_ms_per_call": cpu_ms,
        "load_average_1m": round(os.getloadavg()[0], 2),
    }


def measure(backend: str, size: int, calls: int, agents: int, seconds: float) -> dict[str, Any]:
    """Seed, serve, measure, stop, for one backend and size."""
    with tempfile.TemporaryDirectory(prefix=f"cairn-bench-store-{backend}-") as tmp:
        data_dir = Path(tmp)
        pepper = secrets.token_hex(32)
        (data_dir / PEPPER_FILE).write_text(pepper)
        secrets_file = data_dir / "bench-secrets.json"
        if backend == "sqlite":
            from shared import runtime
            from shared.config.settings import Settings

            began = time.perf_counter()
            runtime.configure(
                Settings(
                    environment="local", storage="sqlite", data_dir=data_dir, token_pepper=pepper
                )
            )
            seeded = seed(size, agents, pepper)
            runtime.configure(Settings())  # closes the database before the server opens it
            seed_seconds = time.perf_counter() - began
            command = [sys.executable, "-m", "shared.cli", "serve"]
        else:
            seed_seconds = 0.0
            command = [
                sys.executable,
                "-m",
                "shared.bench.moto_server",
                "--size",
                str(size),
                "--agents",
                str(agents),
                "--secrets",
                str(secrets_file),
            ]
        server = _Process(command, data_dir)
        try:
            if backend != "sqlite":
                stored = json.loads(secrets_file.read_text())
                seeded = Seeded(stored["admin"], stored["agents"])
            figures: dict[str, Any] = {"backend": backend, "size": size}
            if seed_seconds:
                figures["seed_seconds"] = round(seed_seconds, 1)
            figures.update(_latencies(server.url, seeded.admin, size, calls))
            figures["claim_race"] = _claim_race(
                server.url, seeded.agents, size, calls, seconds, server.process.pid
            )
            return figures
        finally:
            server.stop()


def _ratio(figures: list[dict[str, Any]], backend: str, big: int, small: int) -> dict[str, Any]:
    by_size = {f["size"]: f for f in figures if f["backend"] == backend}
    if big not in by_size or small not in by_size:
        return {}
    return {
        name: round(by_size[big][name]["p50_ms"] / by_size[small][name]["p50_ms"], 2)
        for name in ("memory_get", "recall", "task.poll", "task.claim", "list_handoffs")
    }


def main(argv: Sequence[str] | None = None) -> int:
    """CLI: `cairn bench store [--sizes 1000,10000,100000] [--moto-sizes 1000] …`."""
    parser = argparse.ArgumentParser(prog="cairn bench store", description=__doc__)
    parser.add_argument("--sizes", default="1000,10000,100000")
    # 1k only: moto copies every table a transaction touches, and every claim and keyed
    # memory_put is one (the outbox): 1k took about 10 minutes and 5 GB, and 10k copies ten
    # times the table in every one of those calls (docs/storage.md).
    parser.add_argument("--moto-sizes", default="1000")
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--agents", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    moto_sizes = [int(s) for s in args.moto_sizes.split(",") if s]
    if min(sizes + moto_sizes, default=1) <= args.calls + 2 or args.agents < 1:
        parser.error("every size must exceed --calls + 2, and --agents must be at least 1")
    if moto_sizes and importlib.util.find_spec("moto") is None:
        # `./cairn` installs the runtime only; moto comes with the dev tools (`make bench`).
        print(
            "store bench: moto is not installed (a dev dependency), so the reference is skipped; "
            "`make bench` installs it",
            file=sys.stderr,
        )
        moto_sizes = []
    figures = []
    for backend, backend_sizes in (("sqlite", sizes), ("moto", moto_sizes)):
        for size in backend_sizes:
            print(f"store bench: {backend} at {size:,} …", file=sys.stderr, flush=True)
            result = measure(backend, size, args.calls, args.agents, args.seconds)
            print(json.dumps(result), file=sys.stderr, flush=True)
            figures.append(result)
    summary: dict[str, Any] = {"runs": figures}
    if sizes:
        summary["sqlite_p50_ratio_largest_to_smallest"] = _ratio(
            figures, "sqlite", max(sizes), min(sizes)
        )
    print(json.dumps(summary))
    return 0
