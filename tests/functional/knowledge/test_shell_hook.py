"""The installed bash hook in a real interactive bash: each command is handed to
`cairn capture record` with its exit code and cwd, once, in the background."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from shared.knowledge import capture

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")


def _run_bash(home: Path, script: str) -> list[str]:
    recorded = home / "recorded.txt"
    fake = home / "fake-cairn"
    fake.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> "{recorded}"\n')
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
    subprocess.run(
        ["bash", "-i"],
        input=script,
        text=True,
        env=env,
        cwd=home,
        capture_output=True,
        timeout=30,
        check=False,
    )
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
