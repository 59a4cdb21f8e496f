"""The embedded default's database: one SQLite file in the data folder, shared by every store.

Why the standard library's `sqlite3` and no ORM: each adapter issues a handful of fixed
statements whose row counts it checks (a conditional update is `UPDATE … WHERE <condition>` and
`rowcount == 1`), which is exactly what `sqlite3` gives without a layer in between.

Guarantees the adapters build on:
- **WAL, and a write is on disk before `write` returns** (group commit): a transaction commits
  with `synchronous=NORMAL` (its WAL frames written, not yet synced) and the writer lock passes
  on at once; the writer then waits for one `fsync` of the WAL that began after its commit. One
  fsync thus covers every commit that landed while the previous one ran, instead of one fsync
  per commit under the lock (`synchronous=FULL`): 32 agents claiming share a few fsyncs rather
  than queueing behind 64. A write is durable before the tool call that made it is acknowledged
  (a SIGKILL loses nothing; nor does a power cut, once `write` returned). What differs from
  FULL: another thread may read a commit during the ~ms before its fsync ends, which a power
  cut in that window would roll back (never a crash of the process: the frames are written).
- **`BEGIN IMMEDIATE` for every write**: the transaction holds SQLite's write lock from its first
  statement, so a read-check-write inside it cannot interleave with another writer — in this
  process (other threads) or another (`cairn index`, `cairn tokens`). `busy_timeout` makes the
  second writer wait instead of failing.
- **One connection per thread** (sqlite3 connections must not be shared across threads without
  care): opened lazily, closed by `close`.
- **Versioned schema, forward migrations per store**: each adapter declares its `Migration`s;
  `migrate` applies the ones a database lacks, in one write transaction, so two processes
  starting together apply each exactly once.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from shared.storage.pages import Page, decode_cursor, encode_cursor

logger = logging.getLogger("cairn.storage")

DATABASE_FILE = "cairn.db"
BUSY_TIMEOUT_MS = 30_000


@dataclass(frozen=True)
class Migration:
    """One forward step of one store's schema: `version` counts up from 1 per store."""

    store: str
    version: int
    statements: tuple[str, ...]


@dataclass
class WriteHealth:
    """Whether writes reach the disk: a failure to persist is never silent.

    The write that failed raises (its tool call fails), the failure is logged as an error, and
    it shows here — `/healthz` of the local server reports it — until a later write succeeds.
    Only storage failures count (disk full, I/O error, a locked database past the busy
    timeout): a constraint a store relies on, or a domain error raised inside a transaction,
    is not one.
    """

    failures: int = 0
    last_failure: str | None = None
    last_failure_at: str | None = None
    failing: bool = False

    def saw(self, error: BaseException | None) -> None:
        if error is None:
            self.failing = False
            return
        if not isinstance(error, sqlite3.OperationalError | sqlite3.DatabaseError) or isinstance(
            error, sqlite3.IntegrityError
        ):
            return
        self.failures += 1
        self.failing = True
        self.last_failure = f"{type(error).__name__}: {error}"
        self.last_failure_at = datetime.now(UTC).isoformat()
        logger.error("a write to the database failed", extra={"error": self.last_failure})


class Database:
    """A SQLite database file opened for many threads (and processes) at once.

    >>> db = Database(Path("/tmp/cairn.db"))  # doctest: +SKIP
    >>> with db.write() as tx:  # doctest: +SKIP
    ...     tx.execute("UPDATE t SET v = 1 WHERE k = ?", ("a",))
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._guard = threading.Lock()
        # One writer at a time in this process, queued on a lock rather than on SQLite's busy
        # handler: that handler sleeps 1, 2, 5 … 100 ms between retries, so 32 threads
        # contending for `BEGIN IMMEDIATE` spend most of their time asleep with the lock free
        # (measured: 23 claims/s with 32 agents). Other processes still meet at the file lock.
        # Re-entrant so that a nested `write` fails as before (SQLite refuses a BEGIN inside a
        # transaction) instead of deadlocking.
        self._writer = threading.RLock()
        # Group commit (see the module's docstring): commits numbered in commit order, and the
        # number up to which an fsync of the WAL is known to cover them.
        self._sync = threading.Condition()
        self._committed = 0
        self._synced = 0
        self._syncing = False
        self._wait_for_disk = True
        self._migrated: set[tuple[str, int]] = set()
        self.health = WriteHealth()
        with self.write() as tx:
            tx.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations ("
                " store TEXT NOT NULL, version INTEGER NOT NULL, applied_at TEXT NOT NULL,"
                " PRIMARY KEY (store, version))"
            )

    def _connect(self) -> sqlite3.Connection:
        # isolation_level=None: autocommit unless we BEGIN ourselves, so every transaction's
        # extent is explicit in `write` and nothing is left open by an implicit BEGIN.
        connection = sqlite3.connect(
            self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False
        )
        connection.row_factory = sqlite3.Row
        connection.execute("PRAGMA journal_mode=WAL")
        # The commit writes the WAL frames; `write` syncs them itself, once for many commits.
        connection.execute("PRAGMA synchronous=NORMAL")
        connection.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        connection.execute("PRAGMA foreign_keys=ON")
        with self._guard:
            self._connections.append(connection)
        return connection

    def connection(self) -> sqlite3.Connection:
        """This thread's connection (autocommit: each statement outside `write` is its own)."""
        connection: sqlite3.Connection | None = getattr(self._local, "connection", None)
        if connection is None:
            connection = self._connect()
            self._local.connection = connection
        return connection

    @contextmanager
    def write(self, *, durable: bool = True) -> Iterator[sqlite3.Connection]:
        """A write transaction holding the database's write lock from its first statement.

        Commits when the block ends, rolls back if it raises, and returns once the commit is on
        disk (one fsync shared with the commits made meanwhile). Not re-entrant: a store method
        opens exactly one. `durable=False` is for scratch state only (rate-limit windows): the
        commit is as atomic and as isolated, but does not wait for the fsync (0.3–10 ms, by disk
        and load); the next durable commit's fsync covers it.
        """
        connection = self.connection()
        with self._writer:
            connection.execute("BEGIN IMMEDIATE")
            try:
                yield connection
                connection.execute("COMMIT")
            except BaseException as exc:
                if connection.in_transaction:
                    connection.execute("ROLLBACK")
                self.health.saw(exc)
                raise
            with self._sync:
                self._committed += 1
                commit = self._committed
        # Outside the writer lock: the next writer commits while this one waits for the disk.
        if durable and self._wait_for_disk:
            self._wait_durable(commit)
        self.health.saw(None)

    def skip_fsync_for_setup(self) -> None:
        """Stop waiting for the disk after commits: only for filling a throw-away database
        (a bench seeding its data folder), where an fsync per row would be the whole cost."""
        self._wait_for_disk = False

    def _wait_durable(self, commit: int) -> None:
        """Return once an fsync of the WAL that began after commit number `commit` has ended:
        the first waiter runs it, the others wait for it (or for the next one)."""
        while True:
            with self._sync:
                while self._syncing and self._synced < commit:
                    self._sync.wait()
                if self._synced >= commit:
                    return
                self._syncing = True
                covered = self._committed
            synced = False
            try:
                self._fsync_wal()
                synced = True
            except OSError as exc:
                self.health.saw(sqlite3.OperationalError(f"fsync failed: {exc}"))
                raise
            finally:
                with self._sync:
                    self._syncing = False
                    if synced:
                        self._synced = max(self._synced, covered)
                    self._sync.notify_all()

    def _fsync_wal(self) -> None:
        # The WAL holds every commit not yet checkpointed; a checkpoint syncs the WAL before
        # and the database file after copying (synchronous=NORMAL), so when the WAL is gone,
        # what it held is on disk already and the database file's sync is only belt and braces.
        for candidate in (f"{self.path}-wal", str(self.path)):
            try:
                descriptor = os.open(candidate, os.O_RDONLY)
            except FileNotFoundError:
                continue
            try:
                os.fsync(descriptor)
            finally:
                os.close(descriptor)
            return

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """A read transaction: every statement in the block sees one snapshot (WAL readers
        never block the writer, nor it them)."""
        connection = self.connection()
        connection.execute("BEGIN DEFERRED")
        try:
            yield connection
        finally:
            connection.execute("COMMIT")

    def migrate(self, migrations: Sequence[Migration]) -> None:
        """Apply the migrations this database has not seen yet, in version order per store."""
        pending = [m for m in migrations if (m.store, m.version) not in self._migrated]
        if not pending:
            return
        with self.write() as tx:
            applied = {
                (row["store"], row["version"])
                for row in tx.execute("SELECT store, version FROM schema_migrations")
            }
            for migration in sorted(pending, key=lambda m: (m.store, m.version)):
                key = (migration.store, migration.version)
                if key in applied:
                    continue
                for statement in migration.statements:
                    tx.execute(statement)
                tx.execute(
                    "INSERT INTO schema_migrations (store, version, applied_at) VALUES (?, ?, ?)",
                    (migration.store, migration.version, datetime.now(UTC).isoformat()),
                )
        with self._guard:
            self._migrated.update((m.store, m.version) for m in pending)

    def schema_versions(self) -> dict[str, int]:
        """The newest applied version of each store's schema."""
        rows = self.connection().execute(
            "SELECT store, MAX(version) AS version FROM schema_migrations GROUP BY store"
        )
        return {row["store"]: row["version"] for row in rows}

    def close(self) -> None:
        """Close every thread's connection (the file stays; reopen with a new `Database`).

        Waits for a write in progress in this process: closing a connection under a thread
        that is using it crashes the process.
        """
        with self._writer, self._guard:
            connections, self._connections = self._connections, []
        for connection in connections:
            connection.close()
        self._local = threading.local()


def newest_first_page(
    connection: sqlite3.Connection,
    table: str,
    team: str,
    *,
    order_by: str,
    where: Sequence[str] = (),
    values: Sequence[Any] = (),
    limit: int,
    cursor: str | None,
) -> Page[sqlite3.Row]:
    """A page of `team`'s rows of `table` (their `id`, `order_by` and `record` columns) that
    meet every `where` clause (its `?`s bound to `values`), newest `order_by` first, then by
    id; its cursor continues after its last row. `table`, `order_by` and `where` are the
    adapter's own fixed SQL, never a caller's text.

    >>> newest_first_page(db.connection(), "workflows", "acme", order_by="created_at",
    ...                   limit=20, cursor=None)  # doctest: +SKIP
    """
    clauses = ["team = ?", *where]
    parameters: list[Any] = [team, *values]
    if cursor is not None:
        position = decode_cursor(team, cursor)
        clauses.append(f"({order_by}, id) < (?, ?)")
        parameters += [position[order_by], position["id"]]
    rows = connection.execute(
        f"SELECT id, {order_by}, record FROM {table} WHERE {' AND '.join(clauses)}"  # noqa: S608 - fixed names
        f" ORDER BY {order_by} DESC, id DESC LIMIT ?",
        (*parameters, limit + 1),
    ).fetchall()
    if len(rows) <= limit:
        return Page(rows)
    last = rows[limit - 1]
    return Page(rows[:limit], encode_cursor(team, {order_by: last[order_by], "id": last["id"]}))


def to_json(value: Any) -> str:
    """A JSON column's text. ASCII-only escapes: whatever a record holds, the text is storable."""
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def from_json(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def open_database(data_dir: Path) -> Database:
    """The data folder's database (`cairn.db`), created on first use."""
    return Database(data_dir / DATABASE_FILE)
