"""Background runs of the sync runner: what a large team's `sync` / `embeddings_build` and a
schedule firing do off the tool path, with their progress in a run record.

A tool call records the run as `queued` and hands `(team, run_id)` to a `RunLauncher`: in AWS an
asynchronous invoke of the sync-runner function (`InvocationType=Event`, answered at once), in
local mode a worker thread of the server. `RunExecutor.execute` then does the work, writing the
record at each step (`running`, the phase, `done`/`total`, a heartbeat) and at the end
(`succeeded` or `failed` with the error's kind and message). `sync_status` reads the records; a
run whose heartbeat is older than the runner's longest life is reported `failed` (the runner
timed out or crashed: no one will ever finish the record).
"""

from __future__ import annotations

import json
import logging
import queue
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import islice
from typing import TYPE_CHECKING, Any, Final

from shared.memory.models import Memory
from shared.memory.ports import MemoryStore
from shared.search.service import MemoryEntry, SearchService
from shared.sync.models import (
    OPEN_RUN_STATES,
    RunKind,
    SyncRun,
    SyncRunView,
)
from shared.sync.ports import RunLauncher, SyncState

if TYPE_CHECKING:
    from mypy_boto3_lambda import LambdaClient

logger = logging.getLogger("cairn.sync")

# The runner lives at most 15 minutes (Lambda's limit); a record not touched for longer than
# that and a margin belongs to a runner that died.
STALE_AFTER: Final = timedelta(minutes=16)
# Memories are re-indexed (embedded) this many at a time; progress is written after each batch.
MEMORY_BATCH: Final = 256
# The team's sync lock is a lease of 15 minutes (a crashed sync frees it by then). A run
# holding it renews the lease when it starts and as it makes progress, at most this often, so
# time spent queued before the runner starts never lets the lock lapse under a running run.
LOCK_LEASE_SECONDS: Final = 900
RENEW_EVERY: Final = timedelta(seconds=60)


def new_run_id(now: datetime) -> str:
    """`run_<UTC time to the microsecond>_<random>`: ids sort by creation time."""
    return f"run_{now.astimezone(UTC):%Y%m%d%H%M%S%f}_{secrets.token_hex(4)}"


def lock_holder(run_id: str) -> str:
    """The sync lock's holder while a run holds it."""
    return f"run:{run_id}"


def view(run: SyncRun, now: datetime) -> SyncRunView:
    """The run as reported: an open run nobody has touched for `STALE_AFTER` has failed."""
    state, error = run.state, run.error
    touched = run.heartbeat_at or run.started_at or run.created_at
    if state in OPEN_RUN_STATES and now - touched > STALE_AFTER:
        state = "failed"
        error = (
            "the runner stopped without finishing (it timed out or crashed); start the run again"
            if run.state == "running"
            else "the run never started (the runner could not be reached); start it again"
        )
    return SyncRunView(
        run_id=run.run_id,
        kind=run.kind,
        source=run.source,
        state=state,
        phase=run.phase,
        done=run.done,
        total=run.total,
        created_at=run.created_at,
        started_at=run.started_at,
        finished_at=run.finished_at,
        error=error,
        counts=run.counts,
    )


class RunInterrupted(Exception):
    """The local server is stopping: the run ends here, reported failed."""


@dataclass(eq=False)
class RunExecutor:
    """Does a recorded run's work, reporting progress in its record.

    `sync` runs the team's connectors and prunes expired memories; `embeddings_build` rebuilds
    the document index (one source, or every source and then the memories); `scheduled` does
    both; `remove_connector` forgets the connector `source` names, its schedule and documents.
    """

    state: SyncState
    search: SearchService
    memories: MemoryStore
    connectors: Callable[[str, str | None], dict[str, int]]
    clock: Callable[[], float] = time.time
    remove_connector: Callable[[str, str], dict[str, int]] | None = None

    def _now(self) -> datetime:
        return datetime.fromtimestamp(self.clock(), tz=UTC)

    def execute(
        self, team: str, run_id: str, interrupted: Callable[[], bool] = lambda: False
    ) -> SyncRun:
        """Run `run_id` of `team` once: a run that is not `queued` (a repeated delivery of the
        asynchronous invoke, or one already finished) is returned untouched."""
        run = self.state.get_run(team, run_id)
        if run is None:
            raise LookupError(f"team {team!r} has no sync run {run_id!r}")
        if run.state != "queued":
            return run
        now = self._now()
        run = run.model_copy(update={"state": "running", "started_at": now, "heartbeat_at": now})
        self.state.put_run(team, run)
        if run.holds_lock:
            self.renew(team, run.run_id, now)
        try:
            run = self._work(team, run, interrupted)
            run = run.model_copy(update={"state": "succeeded", "phase": None})
        except Exception as exc:  # the record says why; the caller still sees the exception
            logger.warning(
                "sync run failed",
                extra={"team": team, "run_id": run_id, "error": type(exc).__name__},
            )
            run = run.model_copy(
                update={"state": "failed", "error": f"{type(exc).__name__}: {exc}"[:500]}
            )
            if not isinstance(exc, RunInterrupted):
                self._finish(team, run)
                raise
        self._finish(team, run)
        return run

    def renew(self, team: str, run_id: str, now: datetime) -> None:
        """Extend the run's lock; a lock lost meanwhile is logged (the work is idempotent)."""
        if not self.state.renew_lock(team, lock_holder(run_id), now, LOCK_LEASE_SECONDS):
            logger.warning("sync run lost its lock", extra={"team": team, "run_id": run_id})

    def _finish(self, team: str, run: SyncRun) -> None:
        now = self._now()
        self.state.put_run(team, run.model_copy(update={"finished_at": now, "heartbeat_at": now}))
        if run.holds_lock:
            self.state.release_lock(team, lock_holder(run.run_id))

    def _work(self, team: str, run: SyncRun, interrupted: Callable[[], bool]) -> SyncRun:
        reporter = _Progress(self, team, run, interrupted)
        if run.kind == "remove_connector":
            if run.source is None or self.remove_connector is None:
                raise ValueError("a remove_connector run names its connector in `source`")
            reporter.phase("documents", None)
            reporter.add(self.remove_connector(team, run.source))
        if run.kind in ("sync", "scheduled"):
            reporter.phase("connectors", None)
            reporter.add(self.connectors(team, run.source))
        if run.kind in ("embeddings_build", "scheduled"):
            reporter.phase("documents", None)
            chunks = self.search.rebuild(team, run.source, progress=reporter.step)
            reporter.add({"chunks_indexed": chunks})
            if run.source is None:
                reporter.add(self.reindex_memories(team, reporter))
        return reporter.run

    def reindex_memories(self, team: str, reporter: _Progress | None = None) -> dict[str, int]:
        """Put every active, unexpired memory of `team` back in the search index and take out
        the retired and expired ones still on record (what an index loss or a new embedding
        model needs; `embeddings_build` rebuilds documents only from the documents table)."""
        now = self._now()
        records = list(self.memories.iter_team(team))
        live = [m for m in records if m.active and not m.is_expired(now)]
        removed = 0
        for memory in records:
            if not memory.active or memory.is_expired(now):
                self.search.remove_memory(team, memory.id)
                removed += 1
        if reporter is not None:
            reporter.phase("memories", len(live))
        indexed = 0
        for batch in _batches(iter(live), MEMORY_BATCH):
            indexed += self.search.index_memories(team, (_entry(m) for m in batch))
            if reporter is not None:
                reporter.step(indexed, len(live))
        return {"memories_indexed": indexed, "memories_unindexed": removed}


class _Progress:
    """Writes a run's progress to its record (and stops the run when the server stops)."""

    def __init__(
        self, executor: RunExecutor, team: str, run: SyncRun, interrupted: Callable[[], bool]
    ) -> None:
        self._executor = executor
        self._team = team
        self.run = run
        self._interrupted = interrupted
        self._renewed = executor._now()

    def _save(self, **update: Any) -> None:
        if self._interrupted():
            raise RunInterrupted("the server stopped during the run; start it again")
        now = self._executor._now()
        if self.run.holds_lock and now - self._renewed >= RENEW_EVERY:
            self._executor.renew(self._team, self.run.run_id, now)
            self._renewed = now
        update["heartbeat_at"] = now
        self.run = self.run.model_copy(update=update)
        self._executor.state.put_run(self._team, self.run)

    def phase(self, name: str, total: int | None) -> None:
        self._save(phase=name, done=0, total=total)

    def step(self, done: int, total: int) -> None:
        self._save(done=done, total=total)

    def add(self, counts: dict[str, int]) -> None:
        merged = dict(self.run.counts)
        for key, value in counts.items():
            merged[key] = merged.get(key, 0) + value
        self._save(counts=merged)


def _entry(memory: Memory) -> MemoryEntry:
    return MemoryEntry(
        memory.id, memory.key, memory.content, list(memory.tags), memory.expires_at, memory.heading
    )


def _batches(items: Iterator[Memory], size: int) -> Iterator[list[Memory]]:
    while batch := list(islice(items, size)):
        yield batch


def new_run(
    kind: RunKind, *, source: str | None, requested_by: str, now: datetime, holds_lock: bool
) -> SyncRun:
    return SyncRun(
        run_id=new_run_id(now),
        kind=kind,
        source=source,
        requested_by=requested_by,
        created_at=now,
        holds_lock=holds_lock,
    )


def start_run(
    state: SyncState,
    launcher: Callable[[], RunLauncher],
    team: str,
    run: SyncRun,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> None:
    """Record `run` queued and start the runner (`launcher()`) on it; when the start fails,
    the run is recorded failed (nothing was done) and the error raised."""
    state.put_run(team, run)
    try:
        launcher().launch(team, run.run_id)
    except Exception as exc:
        failed = {"state": "failed", "finished_at": now(), "error": str(exc)[:500]}
        state.put_run(team, run.model_copy(update=failed))
        raise


class LambdaRunLauncher:
    """`RunLauncher` in AWS: an asynchronous invoke of the sync-runner function with
    `{"run": {"team", "run_id"}}`; Lambda queues it and answers 202 at once."""

    def __init__(self, client: LambdaClient, function: str) -> None:
        self._client = client
        self._function = function

    def launch(self, team: str, run_id: str) -> None:
        self._client.invoke(
            FunctionName=self._function,
            InvocationType="Event",
            Payload=json.dumps({"run": {"team": team, "run_id": run_id}}).encode(),
        )


class ThreadRunLauncher:
    """`RunLauncher` of the local server: one worker thread runs queued runs in order.

    `stop` (registered with `runtime.on_reconfigure`) ends the run in progress at its next
    progress step, and the runs still queued at once, all reported failed, then the thread,
    before the database closes under it.
    """

    _STOP: Final = ("", "")

    def __init__(self, execute: Callable[[str, str, Callable[[], bool]], object]) -> None:
        self._execute = execute
        self._queue: queue.Queue[tuple[str, str]] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._guard = threading.Lock()
        self._stopping = threading.Event()

    def launch(self, team: str, run_id: str) -> None:
        with self._guard:
            if self._stopping.is_set():
                raise RuntimeError("the server is stopping; start the run again after restart")
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._loop, name="cairn-sync-runs", daemon=True
                )
                self._thread.start()
            self._queue.put((team, run_id))

    def drain(self) -> None:
        """Block until every launched run has ended."""
        self._queue.join()

    def stop(self, timeout: float = 30.0) -> None:
        with self._guard:
            self._stopping.set()
            thread = self._thread
            if thread is None or not thread.is_alive():
                return
            self._queue.put(self._STOP)
        thread.join(timeout)

    def _loop(self) -> None:
        while True:
            team, run_id = self._queue.get()
            try:
                if (team, run_id) == self._STOP:
                    return
                # Once stopping, a run still queued here is handed over already interrupted: it
                # is recorded failed at once instead of lingering as queued.
                self._execute(team, run_id, self._stopping.is_set)
            except Exception:  # recorded in the run; the worker goes on with the next run
                logger.warning("sync run ended in error", extra={"run_id": run_id})
            finally:
                self._queue.task_done()
