"""`cairn bench soak`: hours of real use, compressed: does a local server leak?

Starts a real `cairn serve` (SQLite stores, embedded index, MiniLM) on a throw-away data folder
and a free loopback port, by default under `ulimit -n 256` (the macOS default), and drives mixed
load through the MCP HTTP endpoint from `--clients` threads: memory_put, remember then
memory_retract, recall, search, memory_search, task.create/claim/complete, store_handoff then
claim_handoff, ingest_events (which queue background enrichment) and ask. Every `--every`
seconds (a minute by default) it prints the server's open files (`/proc/PID/fd`), RSS
(`VmRSS`), threads, calls so far and errors seen.

At the end it queues minutes of enrichment (`BACKLOG_BATCHES` × 500 events) and stops the
server with SIGTERM. It passes when, after the warm-up, open files stay flat (the last sample
at most `FD_SLACK` above the warm-up's), RSS grows at most 15 %, nothing answered "Too many
open files", there was no server error (an HTTP 5xx, a JSON-RPC error such as -32603, a failed
tool call, or an error line in the server's log, the stop's included), and the stop took at
most 10 s. One JSON object on stdout; the per-minute
lines on stderr. Linux only (it reads /proc). Only 127.0.0.1 is ever contacted.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from shared.bench.wire import answers, json_headers, tool_call, unthrottled_token

# Open files may move by a few between samples (a keep-alive connection closed and reopened, a
# WAL file checkpointed); a leak moves them by hundreds.
FD_SLACK = 8
RSS_GROWTH_LIMIT = 0.15
STOP_LIMIT_SECONDS = 10.0
# The backlog queued before the stop: 8 × 500 events, about a minute of enrichment.
BACKLOG_BATCHES = 8
TOO_MANY_OPEN_FILES = "Too many open files"
# A line of the server's log that reports a failure (Python's logging levels and tracebacks).
_ERROR_LINE = re.compile(r"\b(ERROR|CRITICAL)\b|^Traceback|Errno 24|closed database")

HANDOFF = (
    "## Start & intent\nsoak\n## Journey\nx\n## Current state\nx\n## What’s left\nx\n"
    "## Open questions\nx\n"
)
SUBJECTS = ("billing", "deploys", "the search index", "release trains", "on-call", "caching")


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Sample:
    """One reading of the server process."""

    second: float
    open_files: int
    rss_mb: float
    threads: int
    calls: int
    errors: int


def read_process(pid: int) -> tuple[int, float, int]:
    """Open files, RSS in MB and threads of process `pid` (from /proc)."""
    open_files = len(os.listdir(f"/proc/{pid}/fd"))
    rss_kib = threads = 0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            rss_kib = int(line.split()[1])
        elif line.startswith("Threads:"):
            threads = int(line.split()[1])
    return open_files, round(rss_kib / 1024, 1), threads


class SoakServer:
    """`cairn serve` on a free port and `data_dir`, its output to a log file; with `nofile`,
    its open-file limit lowered to that (soft and hard) before it starts."""

    def __init__(self, data_dir: Path, nofile: int | None) -> None:
        self.port = _free_port()
        self.data_dir = data_dir
        self.log = data_dir.parent / "serve.log"
        self.env = {
            **os.environ,
            "CAIRN_PORT": str(self.port),
            "CAIRN_DATA_DIR": str(data_dir),
            "CAIRN_DEV_TOKEN": "cairn_sk_soak-" + secrets.token_hex(16),
        }

        def limit_open_files() -> None:  # runs in the child, before it execs the server
            if nofile is not None:
                resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

        with self.log.open("w") as sink:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "shared.cli", "serve"],
                env=self.env,
                stdout=sink,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                preexec_fn=limit_open_files,
            )
        deadline = time.monotonic() + 240
        while not answers(self.port):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.process.kill()
                raise RuntimeError(f"cairn serve did not start: {self.log.read_text()[-2000:]}")
            time.sleep(0.2)
        self.token = unthrottled_token(self.env, "soak")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp/all"

    def stop(self, sig: int = signal.SIGINT, timeout: float = 30.0) -> float:
        """Ctrl-C (or `sig`), as a user would; the seconds it took to exit (killed after
        `timeout`)."""
        began = time.monotonic()
        self.process.send_signal(sig)
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        return round(time.monotonic() - began, 1)

    def error_lines(self) -> list[str]:
        return [
            line
            for line in self.log.read_text(errors="replace").splitlines()
            if _ERROR_LINE.search(line)
        ]


@dataclass
class Tally:
    """What the clients saw, shared by their threads."""

    calls: int = 0
    server_errors: int = 0
    failed_calls: int = 0
    # Refusals the workload can meet (a memory merged by the curator before its retract)
    expected_refusals: int = 0
    too_many_open_files: int = 0
    examples: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count(
        self, calls: int = 0, server: int = 0, failed: int = 0, expected: int = 0, example: str = ""
    ) -> None:
        with self.lock:
            self.calls += calls
            self.expected_refusals += expected
            self.server_errors += server
            self.failed_calls += failed
            if TOO_MANY_OPEN_FILES in example:
                self.too_many_open_files += 1
            if example and len(self.examples) < 10:
                self.examples.append(example[:300])


class Client:
    """One agent's mixed workload over one keep-alive connection."""

    def __init__(self, slot: int, url: str, token: str, tally: Tally) -> None:
        import httpx

        self.slot = slot
        self.url = url
        self.tally = tally
        self.http = httpx.Client(headers=json_headers(token), timeout=60)
        self.round = 0

    def call(
        self, name: str, arguments: dict[str, Any], expected: tuple[str, ...] = ()
    ) -> dict[str, Any] | None:
        """The tool's structured result, or None when it failed (counted, unless its error's
        code is one of `expected`)."""
        try:
            response = self.http.post(self.url, content=json.dumps(tool_call(name, arguments)))
        except Exception as exc:  # the connection itself failed: the server is in trouble
            self.tally.count(calls=1, server=1, example=f"{name}: {type(exc).__name__}: {exc}")
            return None
        if response.status_code >= 500:
            self.tally.count(calls=1, server=1, example=f"{name}: HTTP {response.status_code}")
            return None
        try:
            payload = response.json()
        except ValueError:
            self.tally.count(calls=1, server=1, example=f"{name}: {response.text[:200]}")
            return None
        if "error" in payload:  # a JSON-RPC error (-32603: the server failed)
            self.tally.count(calls=1, server=1, example=f"{name}: {payload['error']}")
            return None
        result: dict[str, Any] = payload.get("result") or {}
        if response.status_code != 200 or result.get("isError"):
            error = (result.get("structuredContent") or {}).get("error") or {}
            if error.get("code") in expected:
                self.tally.count(calls=1, expected=1)
                return None
            self.tally.count(calls=1, failed=1, example=f"{name}: {json.dumps(result)[:250]}")
            return None
        self.tally.count(calls=1)
        content: dict[str, Any] = result.get("structuredContent") or {}
        return content

    def one_round(self) -> None:
        """A round of an agent's day: write and read memories, retract one, run a task, hand
        work off and take it back, capture some events, and (every few rounds) ask."""
        n, me = self.round, self.slot
        subject = SUBJECTS[(n + me) % len(SUBJECTS)]
        self.round += 1
        # Keys cycle, so the team's memories stay about the same size the whole run.
        self.call(
            "memory_put",
            {"key": f"soak-{me}-{n % 20}", "content": f"{subject} fact {n}: owned by team {me}"},
        )
        remembered = self.call(
            "remember", {"title": f"{subject} note {me}-{n}", "body": f"About {subject}: {n}."}
        )
        self.call("recall", {"query": f"what do we know about {subject}"})
        self.call("search", {"query": subject, "limit": 5})
        self.call("memory_search", {"query": f"who owns {subject}"})
        if remembered and remembered.get("memory_id"):
            retract = {"id": remembered["memory_id"], "reason": "soak: superseded"}
            # not_found: the curator merged it into a near-identical memory first.
            self.call("memory_retract", retract, expected=("not_found",))
        task = self.call("task.create", {"name": f"soak task {me}-{n}"})
        if task and task.get("id") and self.call("task.claim", {"task_id": task["id"]}) is not None:
            self.call("task.complete", {"task_id": task["id"], "output_summary": "done"})
        stored = self.call("store_handoff", {"title": f"soak {me}-{n}", "document_md": HANDOFF})
        if stored and stored["handoff"].get("id"):
            self.call("claim_handoff", {"handoff_id": stored["handoff"]["id"]})
        now_ms = int(time.time() * 1000)
        events = [
            {
                "id": f"soak-{me}-{n}-{k}",
                "source": "shell",
                "timestamp": now_ms - k,
                "command": f"make {subject.replace(' ', '-')} step{k}",
                "exit_code": 0,
                "cwd": f"/src/soak{me}",
            }
            for k in range(3)
        ]
        self.call("ingest_events", {"events": events})
        if n % 5 == 0:
            self.call("ask", {"question": f"what happened with {subject}?"})

    def close(self) -> None:
        self.http.close()


def _warm_up_seconds(seconds: float) -> float:
    """The warm-up (the caches filling, the pools reaching their size): a fifth of the run, 1
    to 5 minutes, for runs of 5 minutes or more; a third of a shorter one."""
    if seconds >= 300:
        return min(300.0, max(60.0, seconds / 5))
    return seconds / 3


def queue_backlog(client: Client, batches: int = BACKLOG_BATCHES) -> None:
    """Queue `batches` × 500 events for background enrichment (and memories for detection):
    minutes of work the server has when it is told to stop."""
    now_ms = int(time.time() * 1000)
    for b in range(batches):
        events = [
            {
                "id": f"backlog-{client.slot}-{b}-{k}",
                "source": "shell",
                "timestamp": now_ms - 500 * b - k,
                "command": f"make backlog{b} step{k}",
                "exit_code": k % 2,
                "cwd": f"/src/backlog{b % 7}",
            }
            for k in range(500)
        ]
        client.call("ingest_events", {"events": events})
        client.call("remember", {"title": f"backlog {b}", "body": f"Backlog fact {b}."})


def run(
    seconds: float = 1800.0,
    clients: int = 4,
    nofile: int | None = 256,
    every: float = 60.0,
    progress: bool = True,
    backlog: int = BACKLOG_BATCHES,
) -> dict[str, Any]:
    """Serve, load, sample, queue a backlog and stop; returns the figures and the verdict
    `main` prints."""

    def say(line: str) -> None:
        if progress:
            print(line, file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory(prefix="cairn-bench-soak-") as tmp:
        server = SoakServer(Path(tmp) / "data", nofile)
        pid = server.process.pid
        tally = Tally()
        stop = threading.Event()
        samples: list[Sample] = []
        stop_seconds: float | None = None
        try:
            before = Sample(0.0, *read_process(pid), calls=0, errors=0)
            # One round first, so the clock starts with the model loaded, as in real use.
            primer = Client(clients, server.url, server.token, tally)
            primer.one_round()
            began = time.monotonic()

            def sample() -> Sample:
                open_files, rss_mb, threads = read_process(pid)
                with tally.lock:
                    calls, errors = tally.calls, tally.server_errors + tally.failed_calls
                taken = Sample(
                    round(time.monotonic() - began, 1), open_files, rss_mb, threads, calls, errors
                )
                samples.append(taken)
                say(
                    f"soak {taken.second:7.1f}s: open files {open_files}, RSS {rss_mb} MB, "
                    f"threads {threads}, calls {calls}, errors {errors}"
                )
                return taken

            def drive(slot: int) -> None:
                client = Client(slot, server.url, server.token, tally)
                try:
                    while not stop.is_set():
                        client.one_round()
                finally:
                    client.close()

            sample()  # the model loaded, before the load
            workers = [threading.Thread(target=drive, args=(i,)) for i in range(clients)]
            for worker in workers:
                worker.start()
            warm_up = _warm_up_seconds(seconds)
            warm: Sample | None = None
            next_at = min(every, warm_up)
            while True:
                time.sleep(max(0.0, min(next_at, seconds) - (time.monotonic() - began)))
                if time.monotonic() - began >= seconds - 0.05:
                    break
                taken = sample()
                if warm is None and taken.second >= warm_up - 0.5:
                    warm = taken
                next_at = taken.second + every
            stop.set()
            for worker in workers:
                worker.join(120)
            final = sample()
            warm = warm or final
            # The stop: SIGTERM with minutes of enrichment queued must end within 10 s.
            queue_backlog(primer, backlog)
            primer.close()
            stop_seconds = server.stop(signal.SIGTERM)
        finally:
            stop.set()
            if stop_seconds is None:
                server.stop(signal.SIGTERM)
        error_lines = server.error_lines()
        # The stop met a backlog (else its time says nothing): the server says what it left.
        backlog_abandoned = "left unenriched" in server.log.read_text(errors="replace")
        stopped_cleanly = server.process.returncode == 0

    too_many = tally.too_many_open_files + sum(TOO_MANY_OPEN_FILES in x for x in error_lines)
    rss_growth = (final.rss_mb - warm.rss_mb) / warm.rss_mb if warm.rss_mb else 0.0
    checks = {
        "open_files_flat": final.open_files <= warm.open_files + FD_SLACK,
        "rss_growth_within_15_percent": rss_growth <= RSS_GROWTH_LIMIT,
        "no_too_many_open_files": too_many == 0,
        "no_server_errors": tally.server_errors == 0 and not error_lines,
        "no_failed_calls": tally.failed_calls == 0,
        "stopped_within_10_s": stopped_cleanly and stop_seconds <= STOP_LIMIT_SECONDS,
    }
    return {
        "seconds": seconds,
        "clients": clients,
        "nofile": nofile,
        "calls": tally.calls,
        "calls_per_second": round(tally.calls / max(final.second, 1e-9), 1),
        "server_errors": tally.server_errors,
        "failed_calls": tally.failed_calls,
        "expected_refusals": tally.expected_refusals,
        "too_many_open_files": too_many,
        "error_log_lines": len(error_lines),
        "examples": tally.examples + error_lines[:5],
        "before_load": asdict(before),
        "start": asdict(samples[0]),
        "warm_up": asdict(warm),
        "final": asdict(final),
        "rss_growth_after_warm_up": round(rss_growth, 3),
        "stop_seconds_with_backlog": stop_seconds,
        "backlog_abandoned_at_stop": backlog_abandoned,
        "samples": [asdict(s) for s in samples],
        "checks": checks,
        "passed": all(checks.values()),
    }


def main(argv: Sequence[str] | None = None) -> int:
    """CLI: `cairn bench soak [--minutes 30 | --seconds S] [--clients 4] [--nofile 256]`;
    exits 1 when a check failed."""
    parser = argparse.ArgumentParser(prog="cairn bench soak", description=__doc__)
    length = parser.add_mutually_exclusive_group()
    length.add_argument("--minutes", type=float, help="how long to load the server (default 30)")
    length.add_argument("--seconds", type=float, help="the same, in seconds (a short run)")
    parser.add_argument("--clients", type=int, default=4, help="client threads (default 4)")
    parser.add_argument(
        "--nofile",
        type=int,
        default=256,
        help="the server's open-file limit, as `ulimit -n` (default 256; 0: leave it)",
    )
    parser.add_argument(
        "--every", type=float, default=60.0, help="seconds between samples (default 60)"
    )
    args = parser.parse_args(argv)
    seconds = args.seconds if args.seconds is not None else 60.0 * (args.minutes or 30.0)
    if seconds <= 0 or args.clients < 1 or args.every <= 0 or args.nofile < 0:
        parser.error("--minutes/--seconds and --every must be positive, --clients at least 1")
    figures = run(seconds, args.clients, args.nofile or None, args.every)
    print(json.dumps(figures))
    if not figures["passed"]:
        failed = [name for name, ok in figures["checks"].items() if not ok]
        print(f"cairn bench soak: FAILED {', '.join(failed)}", file=sys.stderr)
        return 1
    print("cairn bench soak: passed", file=sys.stderr)
    return 0
