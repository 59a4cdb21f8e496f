"""The code stays `ruff` and `mypy --strict` clean: checked on every `make test`."""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = [p for p in ("shared", "functions", "infra") if any((ROOT / p).rglob("*.py"))]
CDK = "aws_cdk"


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


def _cdk_modules_imported() -> set[str]:
    """Every aws-cdk-lib module the type-checked packages import (`from aws_cdk import aws_x`
    names a module when aws_cdk has a package of that name)."""
    spec = importlib.util.find_spec(CDK)
    assert spec is not None
    assert spec.submodule_search_locations
    package = Path(next(iter(spec.submodule_search_locations)))
    found = {CDK}
    for package_name in PACKAGES:
        for path in (ROOT / package_name).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
                if isinstance(node, ast.Import):
                    found |= {a.name for a in node.names if a.name.split(".")[0] == CDK}
                elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == CDK:
                    found.add(str(node.module))
                    if node.module == CDK:
                        found |= {
                            f"{CDK}.{a.name}" for a in node.names if (package / a.name).is_dir()
                        }
    return found


def test_mypy_reads_exactly_the_cdk_modules_the_code_imports() -> None:
    """pyproject skips aws-cdk-lib's modules except a list: a module imported but not listed
    would type as Any, unchecked; a listed module nothing imports is read for nothing."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]["overrides"]
    skipped = [o for o in config if o.get("follow_imports") == "skip" and f"{CDK}.*" in o["module"]]
    assert skipped, "aws-cdk-lib's modules are skipped unless listed"
    (listed,) = [o["module"] for o in config if o.get("follow_imports") == "normal"]
    assert set(listed) == _cdk_modules_imported()
