"""The installed bash hook in a real interactive bash: each command is handed to
`cairn capture record` with its exit code and cwd, once, in the background."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from shared.knowledge import capture
from tests.shells import type_into_shell

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")


def _hooked_home(home: Path, cairn: str, script: str) -> dict[str, str]:
    """`home` with a `cairn` named `cairn` there that runs the sh `script`, and the bash hook
    installed for it; the environment for an interactive bash in `home`."""
    fake = home / cairn
    fake.write_text(f"#!/bin/sh\n{script}")
    fake.chmod(0o755)
    env = {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "TERM": "dumb",
    }
    previous = os.environ.get("XDG_CONFIG_HOME")
    os.environ["XDG_CONFIG_HOME"] = env["XDG_CONFIG_HOME"]
    try:
        capture.install("bash", str(fake), home=home)
    finally:
        if previous is None:
            os.environ.pop("XDG_CONFIG_HOME")
        else:
            os.environ["XDG_CONFIG_HOME"] = previous
    return env


def _type_into_bash(env: dict[str, str], home: Path, typed: str) -> None:
    type_into_shell("bash", typed, env=env, cwd=home, timeout=30)


def _run_bash(home: Path, script: str) -> list[str]:
    recorded = home / "recorded.txt"
    env = _hooked_home(home, "fake-cairn", f'printf "%s\\n" "$*" >> "{recorded}"\n')
    _type_into_bash(env, home, script)
    deadline = time.time() + 5
    lines: list[str] = []
    while time.time() < deadline:
        lines = recorded.read_text().splitlines() if recorded.exists() else []
        if len(lines) >= script.count("\n") - script.count("\n\n") - 1:
            break
        time.sleep(0.1)
    return lines


def _parsed(line: str) -> dict[str, str]:
    words, _, command = line.partition(" -- ")
    parts = words.split()
    assert parts[:2] == ["capture", "record"]
    fields = dict(zip(parts[2::2], parts[3::2], strict=True))
    return {**fields, "command": command}


def test_each_command_is_recorded_once_with_its_exit_code(tmp_path: Path) -> None:
    started = int(time.time() * 1000)
    lines = _run_bash(tmp_path, "echo hello\nfalse\n\nls /nonexistent-dir\nexit\n")
    recorded = [_parsed(line) for line in lines]
    assert [(r["command"], r["--exit-code"], r["--cwd"]) for r in recorded] == [
        ("echo hello", "0", str(tmp_path)),
        ("false", "1", str(tmp_path)),
        ("ls /nonexistent-dir", "2", str(tmp_path)),
    ]
    ends = [int(r["--at-ms"]) for r in recorded]
    assert ends == sorted(ends)
    assert started <= ends[0] <= int(time.time() * 1000)
    assert all(int(r["--duration-ms"]) >= 0 for r in recorded)


def test_a_new_shell_records_no_earlier_command_and_survives_set_u(tmp_path: Path) -> None:
    # Given a history from an earlier session (bash loads it after the rc files) and a .bashrc
    # with `set -u` (the hook read unset variables: it recorded nothing and printed errors)
    (tmp_path / ".bash_history").write_text("make old-session\n")
    (tmp_path / ".bashrc").write_text("set -u\n")
    # When a new shell runs two commands
    _run_bash(tmp_path, "echo hello\nfalse\nexit\n")
    time.sleep(0.5)  # a late extra record would show now
    lines = (tmp_path / "recorded.txt").read_text().splitlines()
    # Then exactly those two are recorded: the earlier session's last command is not again
    assert [(r["command"], r["--exit-code"]) for r in map(_parsed, lines)] == [
        ("echo hello", "0"),
        ("false", "1"),
    ]


def test_a_slow_or_hanging_sender_never_delays_the_prompt(tmp_path: Path) -> None:
    # Given a `cairn` that takes 10 s per command (a slow network, a cold Python, a hang)
    recorded = tmp_path / "slow.txt"
    env = _hooked_home(tmp_path, "slow-cairn", f'printf "%s\\n" "$*" >> "{recorded}"\nsleep 10\n')
    # When three commands are typed, then the shell is done long before one send would be
    started = time.monotonic()
    _type_into_bash(env, tmp_path, "true\ntrue\ntrue\nexit\n")
    elapsed = time.monotonic() - started
    # A waiting prompt takes 30 s here; the margin is wide for a loaded machine.
    assert elapsed < 8.0, f"the prompt waited for the hook ({elapsed:.1f} s)"
    # and each command is still handed over, in the background
    deadline = time.time() + 15
    while time.time() < deadline and (
        not recorded.exists() or len(recorded.read_text().splitlines()) < 3
    ):
        time.sleep(0.2)
    assert len(recorded.read_text().splitlines()) == 3


def test_record_queues_while_offline_and_a_later_send_delivers_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import http.server
    import json
    import socket
    import threading

    from shared.cli import build_parser

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    with socket.socket() as probe:  # a port nothing listens on: the endpoint is offline
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    capture.save_config(capture.CaptureConfig(url=f"http://127.0.0.1:{port}", token="t"))

    def record(command: str) -> int:
        args = build_parser().parse_args(["capture", "record", "--cwd", str(tmp_path), command])
        code: int = args.run(args)
        return code

    assert record("make build") in (0, 1)  # never an exception, whatever the network
    assert record("make test") in (0, 1)
    assert capture.Queue(capture.queue_path()).size() == 2
    # The endpoint comes up: the next flush delivers the queue, and empties it.
    received: list[dict[str, object]] = []

    class Ingest(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.append({"auth": self.headers["Authorization"], **json.loads(body)})
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, *args: object) -> None:
            return

    server = http.server.HTTPServer(("127.0.0.1", port), Ingest)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        args = build_parser().parse_args(["capture", "flush"])
        assert args.run(args) == 0
    finally:
        server.shutdown()
        server.server_close()
    assert [r["auth"] for r in received] == ["Bearer t"]
    events = received[0]["events"]
    assert isinstance(events, list)
    assert [e["command"] for e in events] == ["make build", "make test"]
    assert capture.Queue(capture.queue_path()).size() == 0
