"""Running a program in a fresh interpreter as a Lambda init would: the probes of what a
function's init loads, builds and collects (test_coldstart, test_deferred_tools)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def run_json(program: str, environment: dict[str, str], *args: str) -> Any:
    """The JSON value `program` prints last, run in a fresh interpreter."""
    result = subprocess.run(
        [sys.executable, "-c", program, *args],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


def lambda_init_environment(function: str, catalog: Path) -> dict[str, str]:
    """A deployed `function`'s environment, with the init type Lambda gives it (SnapStart for
    the gateway, on demand for the rest)."""
    from infra.imports import lambda_environment
    from shared.coldstart import INIT_TYPE_ENV

    environment = lambda_environment(catalog)
    environment[INIT_TYPE_ENV] = "snap-start" if function == "gateway" else "on-demand"
    return environment
