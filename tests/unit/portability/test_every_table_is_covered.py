"""Export and team deletion find a team's rows by the `team` column: every table of the
embedded database must carry one (or be listed here as owned by no team), and every store's
schema must be known to the importer (`SQLITE_STORE_MODULES`), or a fresh data folder would
lack its table."""

from __future__ import annotations

import ast
from pathlib import Path

from shared.portability.wiring import SQLITE_STORE_MODULES
from shared.storage.sqlite import Database
from shared.storage.team_data_sqlite import SqliteTeamData

ROOT = Path(__file__).resolve().parents[3]
# Tables no team owns: the schema's own bookkeeping, and rate-limit windows keyed by token
# (erased with the team's tokens).
NO_TEAM = {"schema_migrations", "rate_windows"}


def _declares_migrations(path: Path) -> bool:
    tree = ast.parse(path.read_text())
    return any(
        isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "MIGRATIONS" for t in node.targets)
        for node in tree.body
    )


def test_every_store_schema_is_listed() -> None:
    declaring = {
        ".".join(path.relative_to(ROOT).with_suffix("").parts)
        for path in (ROOT / "shared").rglob("*.py")
        if _declares_migrations(path)
    }
    assert declaring == set(SQLITE_STORE_MODULES)


def test_every_table_carries_its_team(tmp_path: Path) -> None:
    import importlib

    db = Database(tmp_path / "cairn.db")
    for module in SQLITE_STORE_MODULES:
        db.migrate(importlib.import_module(module).MIGRATIONS)
    every = {
        name
        for (name,) in db.connection().execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        )
    }
    team_tables = set(SqliteTeamData(db).team_tables())
    assert every - team_tables == NO_TEAM
    db.close()
