"""cairn's parts stand in layers, and imports run down them, never back up.

Each part (a package of `shared/`, a module at its top, `functions/`, `infra/`) is placed on
one layer below; an import, at a module's top or inside a function, may name its own part or
a part on a lower layer. The few imports that still run up are listed by name in
`KNOWN_UPWARD`, so a new one fails here, and so does a new part nobody placed. There is no
import circle between parts: a circle needs an import that runs up.

Read from the bottom: the foundation (settings, storage primitives, logging), the process
runtime, auth, the tool kit, the protocol and the shared engines (search, domain events), the
tool groups, the composition root (`shared.app`), and what runs it (local mode, the Lambda
entry points, the CLI, the CDK app, the benchmarks).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

LAYERS: tuple[frozenset[str], ...] = tuple(
    frozenset(layer)
    for layer in (
        {
            "shared",
            "shared.config",
            "shared.storage",
            "shared.observability",
            "shared.coldstart",
            "shared.model_fields",
        },
        {"shared.runtime"},
        {"shared.auth"},
        {"shared.tools"},
        {"shared.protocol", "shared.search", "shared.domain_events"},
        {
            "shared.console",
            "shared.connectors",
            "shared.handoffs",
            "shared.memory",
            "shared.orchestrator",
            "shared.knowledge",
        },
        {"shared.sessions", "shared.workflows"},
        {"shared.sync"},
        {"shared.app"},
        # Export, import and erasure of a team: every store and the search index at once,
        # built on the root's services; the local server's admin API and the CLI run it.
        {"shared.portability"},
        {"shared.local", "functions"},
        {"shared.cli", "infra"},
        {"shared.bench"},
    )
)
# (importing module, imported module): imports that run up today, each with its reason to go.
KNOWN_UPWARD: frozenset[tuple[str, str]] = frozenset()
LIMIT = 4


def _part(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] in ("functions", "infra"):
        return parts[0]
    if parts[0] != "shared":
        return None
    return "shared" if len(parts) == 1 else f"shared.{parts[1]}"


def _layer(part: str) -> int:
    return next(index for index, layer in enumerate(LAYERS) if part in layer)


def _modules() -> Iterator[tuple[str, Path]]:
    for top in ("shared", "functions", "infra"):
        for path in sorted((ROOT / top).rglob("*.py")):
            module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            yield module.removesuffix(".__init__"), path


def _imports(module: str, path: Path) -> Iterator[str]:
    """Every module `path` imports, at its top or inside a function (`if TYPE_CHECKING` too:
    a type names its part as much as a call does)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                above = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*above, base] if base else above)
            if base == "shared":  # `from shared import runtime`: the part is the name
                yield from (f"shared.{alias.name}" for alias in node.names)
            else:
                yield base


def _upward_imports() -> set[tuple[str, str]]:
    found = set()
    for module, path in _modules():
        source = _part(module)
        assert source is not None
        for target in _imports(module, path):
            part = _part(target)
            if part is not None and part != source and _layer(part) > _layer(source):
                found.add((module, target))
    return found


def test_every_part_stands_on_a_layer() -> None:
    parts = {_part(module) for module, _ in _modules()}
    placed = set().union(*LAYERS)
    assert parts <= placed, f"place these in LAYERS: {sorted(p for p in parts - placed if p)}"
    assert len(placed) == sum(len(layer) for layer in LAYERS), "a part is on two layers"


def test_imports_run_down_the_layers() -> None:
    upward = _upward_imports()
    assert upward <= KNOWN_UPWARD, (
        "these imports run up the layers: import the lower part from the higher one, or move "
        f"the name down: {sorted(upward - KNOWN_UPWARD)}"
    )


def test_the_known_upward_imports_are_few_and_still_there() -> None:
    assert len(KNOWN_UPWARD) <= LIMIT
    gone = KNOWN_UPWARD - _upward_imports()
    assert gone == set(), f"remove these from KNOWN_UPWARD, they no longer run up: {gone}"
