"""What a Lambda handler imports, measured in a fresh interpreter (the per-function bundle
table in `infra.bundling` is checked against it, and `cairn bench cold` times it).

A handler's packages are those its module loads at init plus the ones cairn's loaded modules
import later, inside functions (opensearch-py at a search group's first query, PyJWT at the
gateway's first OAuth token). The second set is found statically: every import statement of
every cairn module the handler loaded (and, transitively, of the cairn modules those
statements name) outside `if TYPE_CHECKING:` blocks, whose third-party targets are then
imported too. Over-approximating is safe (a bigger bundle); missing one is not. An import
whose line says `# not in Lambda` (local mode's branch of a function) is not followed.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from importlib.metadata import packages_distributions
from pathlib import Path
from typing import Final

ROOT: Final = Path(__file__).resolve().parent.parent

# The environment a deployed function starts with (placeholder names and values: nothing is
# called at import), so handlers build exactly what they build in AWS.
LAMBDA_ENVIRONMENT: Final[Mapping[str, str]] = {
    "CAIRN_ENV": "dev",
    "CAIRN_STORAGE": "dynamodb",
    "AWS_REGION": "us-east-1",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_LAMBDA_FUNCTION_NAME": "cairn-measure",
    # Lambda sets these; the X-Ray SDK takes LAMBDA_TASK_ROOT as "in Lambda" and then builds
    # no sampling client of its own (half a second of botocore models outside Lambda).
    "LAMBDA_TASK_ROOT": "/var/task",
    "AWS_EXECUTION_ENV": "AWS_Lambda_python3.13",
    "CAIRN_TOKEN_PEPPER": "measure-pepper-measure-pepper-measure",
    "CAIRN_PUBLIC_URL": "https://mcp.example.com",
    "CAIRN_TOKENS_TABLE": "tokens",
    "CAIRN_MEMORIES_TABLE": "memories",
    "CAIRN_DOCUMENTS_TABLE": "documents",
    "CAIRN_HANDOFFS_TABLE": "handoffs",
    "CAIRN_SYNC_TABLE": "sync",
    "CAIRN_COORDINATION_TABLE": "coordination",
    "CAIRN_KNOWLEDGE_TABLE": "knowledge",
    "CAIRN_SESSIONS_TABLE": "sessions",
    "CAIRN_ARTIFACTS_BUCKET": "artifacts",
    "CAIRN_SEARCH_ENDPOINT": "https://search.example.com",
    "CAIRN_SEARCH_SERVICE": "aoss",
    "CAIRN_EMBEDDING_MODEL_ID": "amazon.titan-embed-text-v2:0",
    "CAIRN_EMBEDDING_DIMENSIONS": "1024",
    "CAIRN_EVENT_BUS_NAME": "cairn-events",
    "CAIRN_CURATION": "stream",
    "CAIRN_MODEL_CATALOG": "bedrock",
    "POWERTOOLS_SERVICE_NAME": "cairn-measure",
    "POWERTOOLS_METRICS_NAMESPACE": "cairn",
    "POWERTOOLS_TRACE_DISABLED": "true",
    "POWERTOOLS_METRICS_DISABLED": "true",
}

# Runs in the fresh interpreter: argv[1] is the handler module; prints JSON (the top-level
# modules loaded, which `measure` maps to their distributions).
_PROBE: Final = r"""
import ast, importlib, importlib.util, json, sys

importlib.import_module(sys.argv[1])
at_init = set(sys.modules)
# The modules the loaded tool groups import at a tool's first call (the composition root's
# `deferred` entries): part of the function's code though not loaded at init.
root = sys.modules.get("shared.app.groups")
later = root.deferred_modules() if root is not None else []

def own(name):
    return name == "shared" or name.startswith(("shared.", "functions."))

def imports_of(module):
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return []
    source = open(spec.origin, encoding="utf-8").read()
    lines = source.splitlines()
    tree = ast.parse(source)
    package = module if spec.submodule_search_locations else module.rpartition(".")[0]
    found = []
    def visit(node):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                continue  # holds no statement, so no import: most of a tree's nodes
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                for orelse in child.orelse:
                    visit(orelse)
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)) and (
                "# not in Lambda" in lines[child.lineno - 1]
            ):
                continue
            if isinstance(child, ast.Import):
                found.extend(alias.name for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    parts = package.split(".")[: len(package.split(".")) - child.level + 1]
                    base = ".".join(parts + ([base] if base else []))
                found.append(base)
                found.extend(f"{base}.{alias.name}" for alias in child.names)
            visit(child)
    visit(tree)
    return found

seen, todo, third_party = set(), [m for m in at_init if own(m)] + later, set()
while todo:
    module = todo.pop()
    if module in seen:
        continue
    seen.add(module)
    for name in imports_of(module):
        if own(name):
            try:
                if importlib.util.find_spec(name) is not None:
                    todo.append(name)
            except (ImportError, ValueError):
                pass  # `from package import function`: not a module
        elif name and name.split(".")[0] not in sys.stdlib_module_names:
            third_party.add(name)
for name in sorted(third_party):
    try:
        importlib.import_module(name)
    except ImportError:
        pass  # an optional import, or `from module import function`

def tops(modules):
    return sorted({m.split(".")[0] for m in modules})
print(json.dumps({"init": tops(at_init), "all": tops(sys.modules)}))
"""


@dataclass(frozen=True)
class Imports:
    """Normalized distribution names a handler imports: at init, and at init or later."""

    at_init: frozenset[str]
    all: frozenset[str]


def handler_module(function: str) -> str:
    return f"functions.{function}.handler"


def functions() -> list[str]:
    """Every function with a handler under functions/."""
    return sorted(path.parent.name for path in (ROOT / "functions").glob("*/handler.py"))


def measure(function: str, *, catalog: Path | None = None) -> Imports:
    """The distributions `function`'s handler imports, in a fresh interpreter with a Lambda
    environment (its names normalized as the lock spells them); `catalog`: the generated tool
    catalog its bundle carries (the gateway's: `infra.bundling.generate_catalog`)."""
    from infra.bundling import normalize

    result = subprocess.run(  # noqa: S603
        [sys.executable, "-c", _PROBE, handler_module(function)],
        cwd=ROOT,
        env=lambda_environment(catalog),
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"importing {handler_module(function)} failed:\n{result.stderr}")
    found = json.loads(result.stdout.strip().splitlines()[-1])
    distributions = _distributions()

    def providing(modules: list[str]) -> frozenset[str]:
        return frozenset(normalize(name) for m in modules for name in distributions.get(m, ()))

    return Imports(at_init=providing(found["init"]), all=providing(found["all"]))


@functools.cache
def _distributions() -> Mapping[str, list[str]]:
    """Top-level module -> the distributions providing it, in this environment (the one the
    probe runs in: same interpreter and packages). Read once here, not in every probe: it
    parses every installed package's metadata."""
    return packages_distributions()


def lambda_environment(catalog: Path | None = None) -> dict[str, str]:
    """This process's environment less anything cairn or AWS, plus `LAMBDA_ENVIRONMENT` (and
    the generated tool catalog the gateway's bundle would carry)."""
    from shared.tools.catalog import CATALOG_FILE_ENV

    kept = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("CAIRN_", "AWS_", "POWERTOOLS_", "PYTHON"))
    }
    from infra.bundling import RUNTIME_ENVIRONMENT

    extra = {CATALOG_FILE_ENV: str(catalog)} if catalog else {}
    return {
        **kept,
        **LAMBDA_ENVIRONMENT,
        **RUNTIME_ENVIRONMENT,
        **extra,
        "PYTHONPATH": str(ROOT),
    }
