"""The SQLite task store prepares a transition (its event rows) before it takes the writer lock,
and the service read the task before that. These tests land a rival write in exactly that gap
(after the reads, before the lock), as another thread or process can: the transition must be
decided and built from the task as it is under the lock, and a lost one writes no event."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from shared.domain_events.emitter import DomainEvents
from shared.domain_events.models import Kind
from shared.orchestrator.events.adapters.sqlite import SqliteEventLog
from shared.orchestrator.tasks.adapters.sqlite import SqliteTaskStore
from shared.orchestrator.tasks.models import Task
from shared.orchestrator.tasks.ports import ClaimLost, TaskClaim, TaskFinish
from shared.storage.sqlite import Database

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
LEASE = timedelta(minutes=15)


class _RivalFirst:
    """The store's database, with `rival` run once in another connection set (another
    process's, in effect) as the store asks for the writer lock."""

    def __init__(self, db: Database, rival: Callable[[], Any]) -> None:
        self._db = db
        self._rival: Callable[[], Any] | None = rival

    def __getattr__(self, name: str) -> Any:
        return getattr(self._db, name)

    @contextmanager
    def write(self, *, durable: bool = True) -> Iterator[Any]:
        if self._rival is not None:
            rival, self._rival = self._rival, None
            rival()
        with self._db.write(durable=durable) as tx:
            yield tx


@pytest.fixture
def databases(tmp_path: Path) -> Iterator[tuple[Database, Database]]:
    """Two connection sets on one file: the store under test's, and a rival's."""
    mine, theirs = Database(tmp_path / "cairn.db"), Database(tmp_path / "cairn.db")
    yield mine, theirs
    mine.close()
    theirs.close()


@pytest.fixture
def stores(databases: tuple[Database, Database]) -> tuple[SqliteTaskStore, SqliteTaskStore]:
    """The store under test and a rival on the same file, each with its own connections."""
    return SqliteTaskStore(databases[0]), SqliteTaskStore(databases[1])


def _task() -> Task:
    return Task(id="tsk_1", name="t", created_by="boss", created_at=T0, updated_at=T0)


def _rival_first(store: SqliteTaskStore, rival: Callable[[], Any]) -> None:
    store._db = _RivalFirst(store._db, rival)  # type: ignore[assignment]


def test_a_claim_read_before_a_rival_won_it_loses_to_the_rival(
    stores: tuple[SqliteTaskStore, SqliteTaskStore],
) -> None:
    mine, theirs = stores
    mine.create("alpha", _task())
    _rival_first(
        mine, lambda: theirs.claim("alpha", "tsk_1", TaskClaim("rival", T0, T0 + LEASE, 0))
    )
    with pytest.raises(ClaimLost) as lost:
        mine.claim("alpha", "tsk_1", TaskClaim("me", T0, T0 + LEASE, 0))
    assert lost.value.current is not None
    assert lost.value.current.claimed_by == "rival"
    stored = mine.get("alpha", "tsk_1")
    assert stored is not None
    assert (stored.claimed_by, stored.fence) == ("rival", 1)


def test_a_transition_keeps_what_a_rival_wrote_after_the_read(
    stores: tuple[SqliteTaskStore, SqliteTaskStore],
) -> None:
    """The holder's start lands between finish's read and its lock: the condition still holds
    (same holder, same fence), and the finished task keeps the start."""
    mine, theirs = stores
    mine.create("alpha", _task())
    mine.claim("alpha", "tsk_1", TaskClaim("me", T0, T0 + LEASE, 0))
    started = T0 + timedelta(seconds=5)
    _rival_first(mine, lambda: theirs.start("alpha", "tsk_1", "me", started, started + LEASE))
    finished = mine.finish(
        "alpha",
        "tsk_1",
        TaskFinish("me", 1, "completed", {"output_data": {"ok": True}}, T0 + LEASE / 2),
    )
    assert (finished.status, finished.started_at) == ("completed", started)
    assert mine.get("alpha", "tsk_1") == finished


def test_the_events_of_a_lost_transition_are_not_written(
    stores: tuple[SqliteTaskStore, SqliteTaskStore], databases: tuple[Database, Database]
) -> None:
    """The event rows are built before the lock too; a claim lost in the gap writes none."""
    mine, theirs = stores
    mine.create("alpha", _task())
    _rival_first(
        mine, lambda: theirs.claim("alpha", "tsk_1", TaskClaim("rival", T0, T0 + LEASE, 0))
    )
    event = DomainEvents().event("alpha", Kind.TASK_CLAIMED, "me", task_id="tsk_1")
    with pytest.raises(ClaimLost):
        mine.claim("alpha", "tsk_1", TaskClaim("me", T0, T0 + LEASE, 0), events=[event])
    log = SqliteEventLog(databases[1])
    assert log.read_after("alpha", T0 - timedelta(days=1), None, 10) == []
