"""The `cairn` command answers quickly and helpfully: `--help` and `tokens list` import only
what they need, and a misspelt scope is answered with the valid ones."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.protocol.conftest import LocalServer

pytestmark = pytest.mark.protocol

# What a quick command must not import: the server, the stores, the embedder, AWS's SDK.
HEAVY = ("fastapi", "starlette", "numpy", "boto3", "shared.local.runtime", "shared.knowledge")

_PROBE = f"""
import contextlib, io, sys
from shared.cli.main import main
with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):
    main(sys.argv[1:])
heavy = sorted({{m.split(".")[0] if not m.startswith("shared.") else m for m in sys.modules
                if m.startswith({HEAVY!r})}})
print(",".join(heavy))
"""


def _imported(server: LocalServer, *argv: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *argv],
        env=server.env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    line = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    return [name for name in line.split(",") if name]


@pytest.mark.parametrize(
    "argv", [("--help",), ("tokens", "list", "--team", "local"), ("mcp", "--help")]
)
def test_a_quick_command_imports_nothing_heavy(server: LocalServer, argv: tuple[str, ...]) -> None:
    assert _imported(server, *argv) == []


def test_a_misspelt_scope_is_answered_with_the_valid_scopes(server: LocalServer) -> None:
    done = server.cli(
        "tokens",
        "create",
        "--team",
        "local",
        "--name",
        "typo",
        "--scopes",
        "memory,serch",
        check=False,
    )

    assert done.returncode == 2
    assert done.stdout == ""  # no secret: nothing was created
    assert "`scopes`: unknown scope(s): serch (did you mean search?)" in done.stderr
    assert "the valid scopes are admin, agent.read" in done.stderr
    assert "memory.review" in done.stderr
