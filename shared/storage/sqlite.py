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
import queue
import sqlite3
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
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


class _Held:
    """A thread's connection, in its thread-locals: finalized when the thread ends."""

    __slots__ = ("__weakref__", "connection")

    def __init__(self, connection: sqlite3.Connection) -> None:
        self.connection = connection


class ThreadConnections:
    """One connection per running thread, taken from a pool and given back when the thread
    ends, so threads that come and go (a pool that grows for stuck calls and shrinks again)
    reuse connections rather than open new ones.

    Closing them would not do: in WAL mode every connection holds a shared lock on the
    database file, and SQLite keeps the file descriptor of a connection closed while another
    of the process holds a lock on that file until no lock is left (never, while the server
    runs) — open files grew by two per finished thread. Connections open at once stay at the
    most threads that ever used them at once.

    >>> readers = ThreadConnections(lambda: sqlite3.connect(path))  # doctest: +SKIP
    >>> readers.get().execute("SELECT 1")                           # doctest: +SKIP
    """

    def __init__(self, connect: Callable[[], sqlite3.Connection]) -> None:
        self._connect = connect
        self._local = threading.local()
        self._guard = threading.Lock()
        self._all: list[sqlite3.Connection] = []
        # SimpleQueue: its `put` is safe from a finalizer that runs at any moment (garbage
        # collection inside a locked section included), where a lock could deadlock.
        self._idle: queue.SimpleQueue[sqlite3.Connection] = queue.SimpleQueue()
        self._generation = 0

    def get(self) -> sqlite3.Connection:
        """This thread's connection."""
        held: _Held | None = getattr(self._local, "held", None)
        if held is None:
            try:
                connection = self._idle.get_nowait()
            except queue.Empty:
                connection = self._connect()
                with self._guard:
                    self._all.append(connection)
            held = _Held(connection)
            # The thread's locals are freed when it ends, and `held` with them.
            weakref.finalize(held, self._give_back, connection, self._generation)
            self._local.held = held
        return held.connection

    def _give_back(self, connection: sqlite3.Connection, generation: int) -> None:
        if generation != self._generation:
            return  # closed meanwhile (`close_all`)
        try:
            if connection.in_transaction:
                connection.execute("ROLLBACK")
        except sqlite3.Error:
            return  # unusable: left out of the pool (closed by `close_all`)
        self._idle.put(connection)

    @property
    def open_count(self) -> int:
        """Connections open now (in use by a running thread, or idle in the pool)."""
        with self._guard:
            return len(self._all)

    def close_all(self) -> None:
        """Close every connection; threads that use this again get new ones."""
        with self._guard:
            connections, self._all = self._all, []
            self._generation += 1
            self._idle = queue.SimpleQueue()
            self._local = threading.local()
        for connection in connections:
            connection.close()


class Database:
    """A SQLite database file opened for many threads (and processes) at once.

    >>> db = Database(Path("/tmp/cairn.db"))  # doctest: +SKIP
    >>> with db.write() as tx:  # doctest: +SKIP
    ...     tx.execute("UPDATE t SET v = 1 WHERE k = ?", ("a",))
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._connections = ThreadConnections(self._connect)
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
        return connection

    def connection(self) -> sqlite3.Connection:
        """This thread's connection (autocommit: each statement outside `write` is its own),
        given back to a pool when the thread ends (`ThreadConnections`)."""
        return self._connections.get()

    @property
    def open_connections(self) -> int:
        """Connections open now: at most the threads that ever used the database at once."""
        return self._connections.open_count

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
        with self._writer:
            self._connections.close_all()


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


# SQLite binds at most 32,766 parameters a statement; 500 ids keep a read well within it.
IDS_PER_READ = 500


def id_batches(ids: Sequence[str]) -> Iterator[tuple[list[str], str]]:
    """`ids` (repeats dropped) in batches of `IDS_PER_READ`, each with its `?, ?, …` marks for
    an `IN (…)` clause.

    >>> for batch, marks in id_batches(ids):  # doctest: +SKIP
    ...     db.execute(f"SELECT … WHERE id IN ({marks})", batch)
    """
    unique = list(dict.fromkeys(ids))
    for start in range(0, len(unique), IDS_PER_READ):
        batch = unique[start : start + IDS_PER_READ]
        yield batch, ", ".join("?" * len(batch))


def to_json(value: Any) -> str:
    """A JSON column's text. ASCII-only escapes: whatever a record holds, the text is storable."""
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def from_json(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def open_database(data_dir: Path) -> Database:
    """The data folder's database (`cairn.db`), created on first use."""
    return Database(data_dir / DATABASE_FILE)
