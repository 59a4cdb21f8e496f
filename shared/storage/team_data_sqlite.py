"""`TeamData` on the embedded database: every table with a `team` column is the team's.

Export reads all tables in one read transaction of its own connection (a snapshot: writes
committed meanwhile are not half in it; WAL readers never block the writer). Import is
`INSERT OR IGNORE` by primary key (every team table's key begins with `team`), so a second run
changes nothing. Delete is one write transaction over every table.

Table and column names in the statements come from `sqlite_master` and `PRAGMA table_info`,
never from a caller: an import's `kind` and columns are checked against them first.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator, Sequence
from typing import Any

from shared.storage.sqlite import Database
from shared.storage.team_data import TOKEN_KIND, BadRecord, Record, exported_token

# Scratch state, not exported: a held sync lock, rate-limit windows (keyed by token, not team).
SCRATCH_TABLES = frozenset({"sync_locks"})
TOKENS_TABLE = "tokens"


class SqliteTeamData:
    """`TeamData` over every team table of the database."""

    backend = "sqlite"

    def __init__(self, db: Database) -> None:
        self._db = db
        self._tables: dict[str, list[str]] = {}

    def team_tables(self, connection: sqlite3.Connection | None = None) -> dict[str, list[str]]:
        """Each table with a `team` column, and its columns (in table order)."""
        conn = connection or self._db.connection()
        tables: dict[str, list[str]] = {}
        for (name,) in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            " ORDER BY name"
        ).fetchall():
            columns = [row[1] for row in conn.execute(f'PRAGMA table_info("{name}")').fetchall()]
            if "team" in columns:
                tables[name] = columns
        return tables

    def export_team(self, team: str) -> Iterator[Record]:
        conn = sqlite3.connect(self._db.path, isolation_level=None, check_same_thread=False)
        conn.row_factory = sqlite3.Row
        try:
            conn.execute("BEGIN")  # one snapshot for every table
            for table, columns in self.team_tables(conn).items():
                if table in SCRATCH_TABLES:
                    continue
                select = f'SELECT * FROM "{table}" WHERE team = ?'  # noqa: S608
                values: tuple[Any, ...] = (team,)
                if "expires_epoch" in columns:  # the event log: what is within its retention
                    select += " AND (expires_epoch IS NULL OR expires_epoch > ?)"
                    values = (team, int(time.time()))
                cursor = conn.execute(select, values)
                for row in cursor:  # the cursor steps through the table: constant memory
                    if table == TOKENS_TABLE:
                        yield exported_token(json.loads(row["record"]))
                        continue
                    yield {"kind": table, "row": {c: row[c] for c in columns if c != "team"}}
            conn.execute("COMMIT")
        finally:
            conn.close()

    def import_records(
        self, team: str, records: Sequence[Record], exported_team: str | None = None
    ) -> int:
        del exported_team  # rows name their team in the `team` column alone
        written = 0
        statements = [self._statement(team, r, self._known(r)) for r in records]
        with self._db.write() as tx:
            for statement in statements:
                if statement is not None:
                    written += tx.execute(*statement).rowcount
        return written

    def check_record(self, record: Record) -> None:
        self._statement("", record, self._known(record))

    def _known(self, record: Record) -> dict[str, list[str]]:
        """The team tables, read again when `record` names one not seen yet (a store may
        have created its table since)."""
        if record.get("kind") not in self._tables:
            self._refresh()
        return self._tables

    def _refresh(self) -> dict[str, list[str]]:
        self._tables = self.team_tables()
        return self._tables

    @staticmethod
    def _statement(
        team: str, record: Record, tables: dict[str, list[str]]
    ) -> tuple[str, tuple[Any, ...]] | None:
        kind = record.get("kind")
        if kind == TOKEN_KIND:
            return None  # listed, never restored: a token is its secret
        if not isinstance(kind, str) or kind not in tables or kind in SCRATCH_TABLES:
            raise BadRecord(f"`kind` {kind!r} is no table of this store ({', '.join(tables)})")
        row = record.get("row")
        if not isinstance(row, dict):
            raise BadRecord(f"a {kind} record needs `row`, an object of its columns")
        unknown = sorted(set(row) - set(tables[kind]))
        if unknown or "team" in row:
            raise BadRecord(
                f"`row` of {kind} has columns it lacks: {', '.join(unknown or ['team'])}"
            )
        columns = ["team", *row]
        names = ", ".join(f'"{c}"' for c in columns)
        marks = ", ".join("?" for _ in columns)
        return (
            f'INSERT OR IGNORE INTO "{kind}" ({names}) VALUES ({marks})',  # noqa: S608
            (team, *row.values()),
        )

    def delete_team(self, team: str) -> dict[str, int]:
        counts: dict[str, int] = {}
        with self._db.write() as tx:
            tables = self.team_tables(tx)
            if TOKENS_TABLE in tables:
                # Rate-limit windows are keyed by token: they go with the team's tokens.
                has_windows = tx.execute(
                    "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'rate_windows'"
                ).fetchone()
                if has_windows:
                    tx.execute(
                        "DELETE FROM rate_windows WHERE token_id IN"
                        " (SELECT token_id FROM tokens WHERE team = ?)",
                        (team,),
                    )
            for table in tables:
                deleted = tx.execute(f'DELETE FROM "{table}" WHERE team = ?', (team,)).rowcount  # noqa: S608
                if deleted:
                    counts[TOKEN_KIND if table == TOKENS_TABLE else table] = deleted
        return counts
