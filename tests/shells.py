"""Typing into an interactive shell, as a user at a terminal would (the capture hook tests)."""

from __future__ import annotations

import subprocess
from pathlib import Path


def type_into_shell(
    shell: str, typed: str, *, env: dict[str, str], cwd: Path, timeout: float
) -> subprocess.CompletedProcess[str]:
    """`shell -i` (bash, or a zsh's path) fed `typed` on its input; how it exited is the
    caller's to check."""
    return subprocess.run(
        [shell, "-i"],
        input=typed,
        text=True,
        env=env,
        cwd=cwd,
        capture_output=True,
        timeout=timeout,
        check=False,
    )
