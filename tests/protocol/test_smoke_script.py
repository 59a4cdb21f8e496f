"""The pipeline's post-deploy smoke test (scripts/smoke.py), run against a real `cairn serve`
exactly as the pipeline runs it against staging: it passes on a working server and fails, with
a reason, on a token the server refuses."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.protocol.conftest import LocalServer

pytestmark = pytest.mark.protocol

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "smoke.py"


def _smoke(url: str, token: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--url", url, "--token", token],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_smoke_test_passes_against_a_working_server(server: LocalServer) -> None:
    result = _smoke(server.url, server.dev_token)

    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[-1] == "smoke test passed"
    steps = [line.split(" (")[0] for line in lines[:-1]]
    assert steps == [
        "ok  initialize",
        "ok  ping",
        "ok  tools/list",
        "ok  memory_put + memory_get",
        "ok  handoff store, list, claim, second claim refused",
    ]


def test_the_smoke_test_fails_when_the_deployment_refuses_the_token(server: LocalServer) -> None:
    result = _smoke(server.url, "cairn_sk_" + "x" * 43)

    assert result.returncode == 1
    assert result.stderr.startswith("FAIL ")
    assert "smoke test passed" not in result.stdout
