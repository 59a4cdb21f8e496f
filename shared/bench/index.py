"""`cairn bench index`: how fast `cairn index` turns a folder into searchable chunks.

Generates a corpus of markdown files (sections of a few paragraphs, so the chunker makes chunks
of its usual ~1,500 characters), then runs the real `cairn index` CLI twice, each time with a
fresh data folder (so no embedding is cached): once with no server running (it indexes the data
folder in its own process) and once against a `cairn serve` started on a free loopback port,
found through the port it records in its data folder. Reports chunks per second of each, wall
time included (process start, model load). One JSON object on stdout; progress on stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from shared.bench.wire import answers

_WORDS = [
    *("deploy", "rollback", "freeze", "incident", "runbook", "latency", "queue", "token"),
    *("memory", "search", "index", "chunk", "embedding", "server", "client", "agent"),
    *("handoff", "task", "team", "review", "cache", "database", "shard", "replica"),
    *("schema", "migration", "alert", "pager", "budget", "quota", "region", "failover"),
]


def write_corpus(folder: Path, files: int, sections: int, seed: int = 7) -> None:
    """`files` markdown files of `sections` headed sections of three paragraphs each."""
    rng = random.Random(seed)  # noqa: S311 - filler text, not a secret
    folder.mkdir(parents=True, exist_ok=True)
    for number in range(files):
        parts = [f"# Runbook {number}\n"]
        for section in range(sections):
            parts.append(f"\n## Section {section}\n\n")
            for _ in range(3):
                parts.append(" ".join(rng.choice(_WORDS) for _ in range(80)) + ".\n\n")
        (folder / f"runbook-{number:03d}.md").write_text("".join(parts))


def corpus_arguments(
    prog: str,
    description: str | None,
    argv: Sequence[str] | None,
    *,
    files: int,
    sections: int,
    min_files: int = 1,
) -> argparse.Namespace:
    """`--files`, `--sections` (of the corpus `write_corpus` writes) and `--quiet` parsed from
    `argv`, with these defaults; a usage error below `min_files` files or one section."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument(
        "--files", type=int, default=files, help=f"markdown files (default {files})"
    )
    parser.add_argument(
        "--sections", type=int, default=sections, help=f"sections per file (default {sections})"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")
    args = parser.parse_args(argv)
    if args.files < min_files or args.sections < 1:
        if min_files == 1:
            parser.error("--files and --sections must be at least 1")
        parser.error(f"--files must be at least {min_files} and --sections at least 1")
    return args


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _cli_env(data_dir: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"CAIRN_PORT", "CAIRN_STACK_NAME"}}
    return {**env, "CAIRN_DATA_DIR": str(data_dir), **extra}


def _timed_index(corpus: Path, env: dict[str, str]) -> dict[str, Any]:
    started = time.perf_counter()
    done = subprocess.run(  # noqa: S603 - our own CLI, by sys.executable
        [sys.executable, "-m", "shared.cli", "index", str(corpus)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"cairn index failed: {done.stderr}")
    stats: dict[str, Any] = json.loads(done.stdout)
    return {
        "seconds": round(seconds, 2),
        "chunks": stats["chunks"],
        "chunks_per_second": round(stats["chunks"] / seconds, 2),
    }


def _start_server(data_dir: Path) -> subprocess.Popen[str]:
    env = _cli_env(data_dir, CAIRN_PORT="0")  # any free port: the CLI must find it on its own
    process = subprocess.Popen(
        [sys.executable, "-m", "shared.cli", "serve"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    record = data_dir / "server.json"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError("cairn serve exited during start")
        if record.exists() and answers(json.loads(record.read_text())["port"]):
            return process
        time.sleep(0.2)
    process.kill()
    raise RuntimeError("cairn serve did not start within 120 s")


def run(files: int = 24, sections: int = 8, progress: bool = True) -> dict[str, Any]:
    """Index one generated corpus directly and through a server; the figures of both."""

    def say(message: str) -> None:
        if progress:
            print(message, file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory(prefix="cairn-bench-index-") as scratch:
        root = Path(scratch)
        corpus = root / "corpus"
        write_corpus(corpus, files, sections)
        figures: dict[str, Any] = {"files": files, "load_average": round(os.getloadavg()[0], 2)}
        say(f"indexing {files} files directly (no server running)")
        # A port nobody listens on: the CLI must find no server and index the folder itself.
        direct_env = _cli_env(root / "direct", CAIRN_PORT=str(_free_port()))
        figures["direct"] = _timed_index(corpus, direct_env)
        say(f"direct: {figures['direct']}")
        say("starting cairn serve on a free port")
        server = _start_server(root / "served")
        try:
            say(f"indexing {files} files through the server")
            figures["through_server"] = _timed_index(corpus, _cli_env(root / "served"))
            say(f"through server: {figures['through_server']}")
        finally:
            server.send_signal(signal.SIGINT)
            server.wait(timeout=60)
        return figures


def main(argv: Sequence[str] | None = None) -> int:
    """`cairn bench index [--files N] [--sections N]`."""
    args = corpus_arguments("cairn bench index", __doc__, argv, files=24, sections=8)
    print(json.dumps(run(args.files, args.sections, progress=not args.quiet)))
    return 0
