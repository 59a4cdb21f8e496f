"""The official MCP conformance suite (npm `@modelcontextprotocol/conformance`) against cairn.

The suite is pinned in package.json and installed by `make bootstrap` (`npm ci`). It cannot
present a bearer token, so it talks to the served app through a loopback proxy that adds one
(`conformance_proxy.auth_proxy`) and forwards everything else, `Host` and `Origin` included.
Each scenario writes `checks.json`; every check in it must be SUCCESS.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.protocol.conformance_proxy import auth_proxy
from tests.protocol.conftest import LocalServer

pytestmark = pytest.mark.protocol

REPO_ROOT = Path(__file__).resolve().parents[2]
SUITE_BIN = REPO_ROOT / "node_modules" / ".bin" / "conformance"
SCENARIO_TIMEOUT_S = 60

# Scenario -> the check ids it must report (guards against a run that silently checks nothing).
SCENARIOS: dict[str, set[str]] = {
    "server-initialize": {"server-initialize"},
    "ping": {"ping"},
    "tools-list": {"tools-list"},
    "dns-rebinding-protection": {
        "localhost-host-rebinding-rejected",
        "localhost-host-valid-accepted",
    },
}


@pytest.fixture(scope="module")
def proxied_url(server: LocalServer) -> Iterator[str]:
    if not SUITE_BIN.exists() or shutil.which("node") is None:
        pytest.fail(
            f"MCP conformance suite not installed ({SUITE_BIN} missing): run `make bootstrap`"
        )
    with auth_proxy(server.url, server.dev_token) as url:
        yield url


def _load_checks(output_dir: Path) -> list[dict[str, Any]]:
    files = sorted(output_dir.rglob("checks.json"))
    assert len(files) == 1, f"expected one checks.json under {output_dir}, found {files}"
    checks = json.loads(files[0].read_text())
    assert isinstance(checks, list)
    return checks


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_conformance_scenario(scenario: str, proxied_url: str, tmp_path: Path) -> None:
    # The suite's own bin, as `npx --no-install conformance` resolves it, without npx's own
    # node process (~0.6 s of CPU a scenario).
    command = [
        str(SUITE_BIN),
        "server",
        "--url",
        proxied_url,
        "--scenario",
        scenario,
        "--output-dir",
        str(tmp_path),
    ]
    done = subprocess.run(
        command,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=SCENARIO_TIMEOUT_S,
        stdin=subprocess.DEVNULL,
    )
    transcript = (
        f"$ {' '.join(command)}\nexit code {done.returncode}\n"
        f"--- stdout ---\n{done.stdout}\n--- stderr ---\n{done.stderr}"
    )
    assert done.returncode == 0, transcript
    checks = _load_checks(tmp_path)
    failing = [c for c in checks if c.get("status") != "SUCCESS"]
    assert not failing, f"{json.dumps(failing, indent=2)}\n{transcript}"
    reported = {c.get("id") for c in checks}
    missing = SCENARIOS[scenario] - reported
    assert not missing, f"checks not reported: {sorted(missing)}\n{transcript}"
