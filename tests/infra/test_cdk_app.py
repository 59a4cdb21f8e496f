"""cdk.json runs the app through scripts/cdk-app, which finds uv the way ./cairn and the Makefile
do (scripts/find-uv): `make synth` and `make deploy` work when uv is not on PATH."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# What a shell without uv offers: the system's folders only.
PATH_WITHOUT_UV = "/usr/bin:/bin"


def _fake_uv(home: Path) -> Path:
    """A `uv` in ~/.local/bin (where its installer and pip --user put it, off PATH), which
    prints the arguments it was run with."""
    uv = home / ".local" / "bin" / "uv"
    uv.parent.mkdir(parents=True)
    uv.write_text('#!/bin/sh\necho "uv $*"\n')
    uv.chmod(0o755)
    return uv


def test_cdk_json_runs_the_app_through_the_uv_lookup() -> None:
    app = json.loads((ROOT / "cdk.json").read_text())["app"]
    assert app == "scripts/cdk-app"
    assert "scripts/find-uv" in (ROOT / "scripts" / "cdk-app").read_text()
    assert os.access(ROOT / app, os.X_OK)


def _script_output(script: str, env: dict[str, str], cwd: Path | None = None) -> str:
    """What `scripts/<script>` prints (it must succeed within 30 s)."""
    return subprocess.run(
        [str(ROOT / "scripts" / script)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    ).stdout.strip()


def test_the_app_command_finds_uv_off_path(tmp_path: Path) -> None:
    assert shutil.which("uv", path=PATH_WITHOUT_UV) is None
    uv = _fake_uv(tmp_path)
    environment = {"HOME": str(tmp_path), "PATH": PATH_WITHOUT_UV}
    app = _script_output("cdk-app", environment, cwd=ROOT)
    assert app == f"uv run --project {ROOT} --frozen python -m infra.app"
    assert _script_output("find-uv", environment) == str(uv)
