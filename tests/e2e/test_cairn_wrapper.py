"""`./cairn` works as the README writes it, from another directory and with a PATH that lacks
uv's folder (as after `make serve` installed uv into ~/.local/bin on a fresh machine)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.protocol.conftest import free_port, start_server, stop_server

REPO = Path(__file__).resolve().parents[2]
WRAPPER = REPO / "cairn"
FIND_UV = REPO / "scripts" / "find-uv"


def _uv_outside_path() -> Path:
    """The uv that scripts/find-uv finds beside PATH; the test needs one (it installs none)."""
    for folder in (Path.home() / ".local" / "bin", Path.home() / ".cargo" / "bin"):
        if (folder / "uv").is_file():
            return folder / "uv"
    pytest.skip("no uv in ~/.local/bin or ~/.cargo/bin to find outside PATH")


def _bare_env(data_dir: Path, uv: Path) -> dict[str, str]:
    """The user's environment with uv's folder and the venv taken off PATH, no CAIRN_PORT."""
    dropped = {str(uv.parent), str(REPO / ".venv" / "bin")}
    path = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p and p not in dropped]
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"CAIRN_PORT", "CAIRN_STACK_NAME", "VIRTUAL_ENV"}
    }
    env.update(PATH=os.pathsep.join(path or ["/usr/bin", "/bin"]), CAIRN_DATA_DIR=str(data_dir))
    return env


def _wrapper(
    env: dict[str, str], cwd: Path, *args: str, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(WRAPPER), *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def test_find_uv_finds_uv_off_path(tmp_path: Path) -> None:
    uv = _uv_outside_path()
    env = _bare_env(tmp_path, uv)
    if shutil.which("uv", path=env["PATH"]) is not None:
        pytest.skip("uv is also elsewhere on PATH: this test needs a PATH without it")
    found = subprocess.run(
        [str(FIND_UV)], env=env, capture_output=True, text=True, check=True, timeout=60
    )
    assert Path(found.stdout.strip()) == uv
    assert "pip" not in found.stderr  # uv was present: nothing was installed


def test_the_wrapper_runs_cairn_without_uv_on_path(tmp_path: Path) -> None:
    env = _bare_env(tmp_path / "data", _uv_outside_path())
    done = _wrapper(env, tmp_path, "--help")
    assert done.returncode == 0, done.stderr
    for command in ("serve", "tokens", "index", "bench"):
        assert command in done.stdout


@pytest.mark.protocol
def test_the_readme_commands_reach_a_running_server_through_the_wrapper(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "oncall.md").write_text("# On call\n\nThe on-call phone is in the top drawer.\n")
    env = _bare_env(data_dir, _uv_outside_path())
    server = start_server(data_dir, free_port())
    try:
        listed = _wrapper(env, tmp_path, "tokens", "list", "--team", "local")
        assert listed.returncode == 0, listed.stderr
        assert [json.loads(line)["name"] for line in listed.stdout.splitlines()] == ["dev"]
        # A relative path, resolved from the caller's directory (not the repository's).
        indexed = _wrapper(env, tmp_path, "index", "notes")
        assert indexed.returncode == 0, indexed.stderr
        assert json.loads(indexed.stdout)["indexed"] == 1
    finally:
        stop_server(server)
