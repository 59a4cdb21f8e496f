"""Moving a team between backends cannot miss a store: every SQLite table of a team has its
DynamoDB translation (`shared.portability.dynamo_rows`), every item kind a DynamoDB adapter
writes has its row or is named as derived or scratch, and an item of a kind nobody declared
stops an export rather than being left out. (The round trips through the tools, both ways:
`test_across_backends.py`, in `make bench`.)"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

from shared.config import names
from shared.portability.dynamo_rows import BY_TABLE, DERIVED, KINDS, OUTSIDE_TABLES, kind_of
from shared.portability.wiring import SQLITE_STORE_MODULES
from shared.storage.sqlite import Database
from shared.storage.team_data import BadRecord
from shared.storage.team_data_sqlite import SCRATCH_TABLES, TOKENS_TABLE, SqliteTeamData

ROOT = Path(__file__).resolve().parents[3]
# Key prefixes that name no item kind: partitions (a team's, a token's hash) and scratch
# (rate-limit windows, a held sync lock), which no export carries.
NOT_KINDS = {"TEAM#", "HASH#", "RATE#", "LOCK#"}
PREFIX = re.compile(r"""["']([A-Z][A-Z_]*#)""")


def test_every_team_table_has_its_translation(tmp_path: Path) -> None:
    db = Database(tmp_path / "cairn.db")
    for module in SQLITE_STORE_MODULES:
        db.migrate(importlib.import_module(module).MIGRATIONS)
    tables = set(SqliteTeamData(db).team_tables()) - SCRATCH_TABLES - {TOKENS_TABLE}
    db.close()
    assert tables == set(BY_TABLE) | OUTSIDE_TABLES


def test_every_key_prefix_the_adapters_write_is_a_kind_or_named() -> None:
    written = {
        prefix
        for path in (ROOT / "shared").rglob("*.py")
        if "portability" not in path.parts
        for prefix in PREFIX.findall(path.read_text())
    }
    known = {kind.prefix for kind in KINDS} | {prefix for _, prefix in DERIVED} | NOT_KINDS
    assert written - known == set()


def test_an_item_of_no_known_kind_stops_the_export() -> None:
    with pytest.raises(BadRecord, match=r"coordination item NEW#"):
        kind_of(names.TABLE_COORDINATION, {"pk": "TEAM#a", "sk": "NEW#1"})
    assert kind_of(names.TABLE_MEMORIES, {"pk": "TEAM#a", "sk": "KEY#k"}) is None
    assert kind_of(names.TABLE_COORDINATION, {"sk": "WFX#1"}) == BY_TABLE["workflow_executions"]
