"""The wiring reads one way: tools → wiring → services/adapters, never back.

A service imports ports and models only; each group's services are built in its `wiring.py`;
importing a service or a wiring module never pulls in the tool catalog or the protocol layer
(the old cycle was orchestrator → protocol/wiring → tools/groups → orchestrator). The cross-group
wiring of the composition root (`shared/app/wiring.py`, `reactions.py`) is held to the same
rules.
"""

from __future__ import annotations

import ast
import functools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT / "shared"
SERVICE_FILES = sorted([*SHARED.glob("*/service.py"), *SHARED.glob("*/*/service.py")])
WIRING_FILES = sorted(
    [*SHARED.glob("*/wiring.py"), *SHARED.glob("*/*/wiring.py"), SHARED / "app" / "reactions.py"]
)
# Layers a service or a builder must never load: the catalog of every group and the MCP protocol.
FORBIDDEN_PREFIXES = ("shared.app.groups", "shared.protocol")


def _module(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def imported_modules(path: Path) -> list[str]:
    """Every module `path` imports, at the top or inside a function."""
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.append(node.module)
            found.extend(f"{node.module}.{alias.name}" for alias in node.names)
    return found


# A bare parent that forks one child per module: each child starts from an interpreter that has
# loaded none of our modules, so what it reports is exactly what a fresh interpreter would load
# (a module imported earlier in the same process would hide what a later one pulls in). The
# parent first loads the third-party packages the services share (boto3, pydantic, ...): they
# never import our code, so preloading them changes no answer and saves each child ~1 s of CPU.
FORKING_PROBE = """
import importlib, json, os, sys, traceback
import boto3, cronsim, pydantic, pydantic.json_schema, sqlite3, zoneinfo
class Warm(pydantic.BaseModel):  # pydantic's one-time setup (its plugin scan) at the first model
    when: zoneinfo.ZoneInfo | None = None
ours = sorted(m for m in sys.modules if m == "shared" or m.startswith("shared."))
assert not ours, f"the parent must load none of our modules, it loaded {ours}"
modules, prefixes = json.loads(sys.argv[1]), tuple(json.loads(sys.argv[2]))
found = {}
for module in modules:
    read, write = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(read)
        try:
            importlib.import_module(module)
            answer = {"loaded": sorted(m for m in sys.modules if m.startswith(prefixes))}
        except BaseException:
            answer = {"error": traceback.format_exc()}
        with os.fdopen(write, "w") as out:
            json.dump(answer, out)
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as answers:
        found[module] = json.load(answers)
    os.waitpid(child, 0)
print(json.dumps(found))
"""


@functools.cache
def _loaded_after_imports(modules: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """For each module, the forbidden modules loaded after importing it in a fresh interpreter
    (or the error its import raised)."""
    done = subprocess.run(
        [sys.executable, "-c", FORKING_PROBE, json.dumps(modules), json.dumps(FORBIDDEN_PREFIXES)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    found: dict[str, dict[str, Any]] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def _loaded_after_import(module: str) -> list[str]:
    """The forbidden modules a fresh interpreter has loaded after importing `module` (probed
    for every service and builder at once, the first time one is asked for)."""
    answer = _loaded_after_imports(tuple(_module(p) for p in SERVICE_FILES + WIRING_FILES))[module]
    assert "error" not in answer, answer["error"]
    loaded: list[str] = answer["loaded"]
    return loaded


def test_the_layout_has_the_service_and_wiring_modules_it_is_checked_on() -> None:
    # Guards the globs: a moved tree would otherwise make every check below pass on nothing.
    assert {_module(p) for p in SERVICE_FILES} >= {
        "shared.memory.service",
        "shared.orchestrator.agents.service",
        "shared.orchestrator.service",
    }
    assert {_module(p) for p in WIRING_FILES} >= {
        "shared.auth.wiring",
        "shared.orchestrator.wiring",
        "shared.search.wiring",
    }


@pytest.mark.parametrize("path", SERVICE_FILES + WIRING_FILES, ids=_module)
def test_importing_a_service_or_builder_loads_neither_the_catalog_nor_the_protocol(
    path: Path,
) -> None:
    assert _loaded_after_import(_module(path)) == []


@pytest.mark.parametrize("path", SERVICE_FILES, ids=_module)
def test_a_service_imports_no_adapter(path: Path) -> None:
    adapters = [m for m in imported_modules(path) if "adapters" in m.split(".")]
    assert adapters == [], f"{_module(path)} imports {adapters}: build it in its wiring.py"


@pytest.mark.parametrize("path", SERVICE_FILES, ids=_module)
def test_a_service_imports_no_builder_and_no_layer_above_it(path: Path) -> None:
    # Even inside a function: a lazy import of a builder is how the old cycle hid.
    upward = [
        m
        for m in imported_modules(path)
        if m.startswith(FORBIDDEN_PREFIXES) or m.split(".")[-1] in ("wiring", "tools")
    ]
    assert upward == [], f"{_module(path)} imports {upward}: services take their parts as arguments"


def test_services_are_built_only_in_wiring_modules() -> None:
    misplaced = [
        f"{_module(path)}.{node.name}"
        for path in SHARED.rglob("*.py")
        # The composition root builds what several groups make together (shared/app/).
        if path.name != "wiring.py" and path.parent != SHARED / "app"
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path)))
        if isinstance(node, ast.FunctionDef)
        and node.name.startswith("build_")
        and node.name.endswith("service")
    ]
    assert misplaced == [], f"move these builders into their group's wiring.py: {misplaced}"
