"""The storage backend is chosen once per process (`runtime.backend()`), and every store's
wiring builds its adapter through it rather than asking which storage it is on.

A new `if settings().storage == "sqlite"` in a wiring fails here; so does a backend that
builds the wrong side of a port's adapter pair.
"""

from __future__ import annotations

import ast
from pathlib import Path

from shared import runtime
from shared.config.settings import Settings
from shared.handoffs.adapters.dynamodb import DynamoHandoffStore
from shared.handoffs.adapters.sqlite import SqliteHandoffStore
from shared.handoffs.wiring import build_handoff_store
from shared.storage.backends import DynamoBackend, SqliteBackend

ROOT = Path(__file__).resolve().parents[2]
# Only the runtime picks the backend; the benchmarks set up both on purpose.
CHOOSER = ROOT / "shared" / "runtime.py"
EXEMPT = ROOT / "shared" / "bench"


def _is_settings(node: ast.expr) -> bool:
    """`settings`, `runtime.settings()` or `settings()`: the process's settings."""
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr == "settings"
    return isinstance(node, ast.Name) and node.id == "settings"


def _reads_the_storage_setting(path: Path) -> list[int]:
    lines = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Attribute) and node.attr == "storage" and _is_settings(node.value):
            lines.append(node.lineno)
    return lines


def test_only_the_runtime_reads_which_storage_the_process_is_on() -> None:
    readers = {
        f"{path.relative_to(ROOT)}:{line}"
        for top in ("shared", "functions")
        for path in (ROOT / top).rglob("*.py")
        if path != CHOOSER and EXEMPT not in path.parents
        for line in _reads_the_storage_setting(path)
    }
    assert not readers, (
        "build adapters with runtime.backend().build(Adapters(...)) instead of reading "
        f"settings().storage: {sorted(readers)}"
    )


def test_sqlite_settings_build_sqlite_adapters(tmp_path: Path) -> None:
    runtime.configure(Settings(storage="sqlite", data_dir=tmp_path, token_pepper="p" * 32))
    try:
        assert isinstance(runtime.backend(), SqliteBackend)
        assert runtime.backend() is runtime.backend(), "chosen once per configure"
        assert isinstance(build_handoff_store(), SqliteHandoffStore)
    finally:
        runtime.configure(Settings())


def test_dynamodb_settings_build_dynamodb_adapters() -> None:
    # Building an adapter calls no AWS API: the table is resolved by name only.
    runtime.configure(Settings(storage="dynamodb", token_pepper="p" * 32))
    try:
        assert isinstance(runtime.backend(), DynamoBackend)
        assert isinstance(build_handoff_store(), DynamoHandoffStore)
    finally:
        runtime.configure(Settings())
