"""The code stays `ruff` and `mypy --strict` clean: checked on every `make test`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = [p for p in ("shared", "functions", "infra") if any((ROOT / p).rglob("*.py"))]


def _run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *command], cwd=ROOT, capture_output=True, text=True, timeout=300
    )


def test_ruff_finds_nothing() -> None:
    done = _run("ruff", "check", *PACKAGES, "tests")
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy_strict_finds_nothing() -> None:
    done = _run("mypy", *PACKAGES)
    assert done.returncode == 0, done.stdout + done.stderr
