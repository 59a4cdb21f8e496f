"""The installed zsh hook in a real interactive zsh: each command reaches the real
`cairn capture record` once, with its exit code, duration, cwd, git repo and branch, and the
prompt never waits for it.

Needs Debian's zsh (`make test` installs it as root): without it these tests skip and say how
to install it; under CI (`CI=1` from `.ci/run`, `CI=true` on GitHub: tests/ci.py) they fail
instead.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from shared.cli import build_parser
from shared.knowledge import capture
from tests.ci import skip_unless_ci
from tests.shells import type_into_shell

ORIGIN = "git@github.com:acme/billing.git"


def _zsh() -> str:
    found = shutil.which("zsh")
    if found:
        return found
    reason = (
        "zsh not found: install Debian's zsh with `apt-get install -y zsh` "
        "(`make test` does when it runs as root)"
    )
    skip_unless_ci("zsh hook tests", reason)


def _isolated(home: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """This process and the shell see `home` as $HOME, with the config and queue under it."""
    env = {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "TERM": "dumb",
    }
    for key, value in env.items():
        if key != "PATH":
            monkeypatch.setenv(key, value)
    return env


def _install(cairn: str, url: str) -> None:
    args = build_parser().parse_args(
        ["capture", "install", "--shell", "zsh", "--url", url, "--token", "t", "--cairn", cairn]
    )
    assert args.run(args) == 0


def _offline_url() -> str:
    with socket.socket() as probe:  # a port nothing listens on: the endpoint is offline
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}"


def _zsh_session(zsh: str, env: dict[str, str], cwd: Path, typed: str) -> tuple[float, str]:
    """Type `typed` into an interactive zsh; returns (seconds until it exited, its stderr)."""
    started = time.monotonic()
    done = type_into_shell(zsh, typed, env=env, cwd=cwd, timeout=60)
    return time.monotonic() - started, done.stderr


def _queued(count: int, within: float) -> list[dict[str, Any]]:
    """The queue once `count` events are in it (records run in the background), or at the end."""
    deadline = time.monotonic() + within
    while True:
        path = capture.queue_path()
        lines = path.read_text().splitlines() if path.exists() else []
        if len(lines) >= count or time.monotonic() > deadline:
            return [json.loads(line) for line in lines]
        time.sleep(0.2)


def test_each_zsh_command_is_recorded_once_with_exit_code_duration_cwd_repo_and_branch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    zsh = _zsh()
    env = _isolated(tmp_path, monkeypatch)
    # Given a checkout of acme/billing on branch feature/login, and a folder outside any repo
    repo, outside = tmp_path / "billing", tmp_path / "outside"
    (repo / "src").mkdir(parents=True)
    outside.mkdir()
    for git in (["init", "-q", "-b", "feature/login"], ["remote", "add", "origin", ORIGIN]):
        subprocess.run(["git", "-C", str(repo), *git], check=True, env=env)
    # and a user whose .zshrc sets the strict options that broke the first hook (an unset
    # variable failed the first prompt; globals created in functions printed a warning)
    (tmp_path / ".zshrc").write_text("setopt nounset warn_create_global ksh_arrays sh_word_split\n")
    # When the real `cairn capture install` hooks zsh (the endpoint is offline: events queue)
    cairn = Path(sys.executable).parent / "cairn"
    assert cairn.exists(), f"the project's console script is missing at {cairn}"
    _install(str(cairn), _offline_url())
    started_ms = int(time.time() * 1000)
    _, errors = _zsh_session(
        zsh,
        env,
        repo,
        f"echo hello\nfalse\n\nsleep 0.3\ncd src\nls /nonexistent-dir\ncd {outside}\ntrue\nexit\n",
    )
    ended_ms = int(time.time() * 1000)
    # Then each command is queued once (the empty line is none), with what it did and where
    expected = [
        ("echo hello", 0, repo),
        ("false", 1, repo),
        ("sleep 0.3", 0, repo),
        ("cd src", 0, repo / "src"),  # cwd is where the prompt returned
        ("ls /nonexistent-dir", 2, repo / "src"),
        (f"cd {outside}", 0, outside),
        ("true", 0, outside),
    ]
    events = _queued(len(expected), within=30)
    assert "__cairn" not in errors, errors
    assert sorted(e["command"] for e in events) == sorted(c for c, _, _ in expected)
    by_command = {e["command"]: e for e in events}
    for command, exit_code, cwd in expected:
        event = by_command[command]
        assert (event["source"], event["exit_code"], event["cwd"]) == ("shell", exit_code, str(cwd))
        assert isinstance(event["duration_ms"], int)
        assert 0 <= event["duration_ms"] < 5_000, event
        if cwd == outside:
            assert "git_repo" not in event, event
            assert "git_branch" not in event, event
        else:
            assert (event["git_repo"], event["git_branch"]) == ("acme/billing", "feature/login")
            assert event["repo_root"] == str(repo)
    assert by_command["sleep 0.3"]["duration_ms"] >= 300
    # the hook stamps when each command ended: in the order they were typed
    stamps = [by_command[command]["timestamp"] for command, _, _ in expected]
    assert stamps == sorted(stamps)
    assert started_ms <= stamps[0]
    assert stamps[-1] <= ended_ms


def test_a_slow_or_hanging_sender_never_delays_the_zsh_prompt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    zsh = _zsh()
    env = _isolated(tmp_path, monkeypatch)
    # Given a `cairn` that takes 10 s per command (a slow network, a cold Python, a hang)
    recorded = tmp_path / "slow.txt"
    slow = tmp_path / "slow-cairn"
    slow.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> "{recorded}"\nsleep 10\n')
    slow.chmod(0o755)
    _install(str(slow), _offline_url())
    # When three commands are typed, then the shell is done long before one send would be
    elapsed, _ = _zsh_session(zsh, env, tmp_path, "true\ntrue\ntrue\nexit\n")
    # A waiting prompt takes 30 s here; the margin is wide for a loaded machine.
    assert elapsed < 8.0, f"the prompt waited for the hook ({elapsed:.1f} s)"
    # and each command is still handed over, in the background
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and (
        not recorded.exists() or len(recorded.read_text().splitlines()) < 3
    ):
        time.sleep(0.2)
    lines = recorded.read_text().splitlines()
    assert len(lines) == 3
    assert all(line.startswith("capture record --exit-code 0 ") for line in lines), lines
    assert all(line.endswith(f"--cwd {tmp_path} -- true") for line in lines), lines
