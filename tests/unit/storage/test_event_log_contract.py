"""The EventLog contract, on DynamoDB (moto) and SQLite alike."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from shared.orchestrator.events.models import Event
from shared.orchestrator.events.ports import EventLog
from shared.orchestrator.events.wiring import build_event_log
from tests.unit.storage.conftest import Backend

# Relative to the wall clock: the log's retention is checked against it at read time.
NOW = datetime.now(UTC).replace(microsecond=0)
T0 = NOW - timedelta(days=1)
LONG_AGO = NOW - timedelta(days=30)


def event(number: int, event_type: str = "build.done", **fields: Any) -> Event:
    values: dict[str, Any] = {
        "event_id": f"evt-{number:04d}",
        "event_type": event_type,
        "payload": {"n": number},
        "published_by": "agent-a",
        "published_at": T0 + timedelta(seconds=number),
    }
    values.update(fields)
    return Event.model_validate(values)


def ids(events: list[Event]) -> list[str]:
    return [e.event_id for e in events]


@pytest.fixture
def log(backend: Backend) -> EventLog:
    return build_event_log()


def test_an_appended_event_reads_back_whole(log: EventLog) -> None:
    appended = event(1, payload={"nested": {"list": [1, "two", None, True]}, "ratio": 1.5})
    log.append("alpha", appended)
    assert log.read_after("alpha", LONG_AGO, None, 10) == [appended]


def test_an_append_that_does_not_wait_for_the_disk_is_read_like_any_other(
    log: EventLog,
) -> None:
    log.append("alpha", event(1), durable=False)
    log.append("alpha", event(2))
    assert ids(log.read_after("alpha", LONG_AGO, None, 10)) == ["evt-0001", "evt-0002"]


def test_events_read_oldest_first_then_by_id(log: EventLog) -> None:
    log.append("alpha", event(3))
    log.append("alpha", event(1))
    log.append("alpha", event(2))
    log.append("alpha", event(9, published_at=T0 + timedelta(seconds=2)))  # same time as 2
    assert ids(log.read_after("alpha", LONG_AGO, None, 10)) == [
        "evt-0001",
        "evt-0002",
        "evt-0009",
        "evt-0003",
    ]


def test_since_is_exclusive_and_continues_where_the_last_read_ended(log: EventLog) -> None:
    for number in range(1, 6):
        log.append("alpha", event(number))
    first = log.read_after("alpha", LONG_AGO, None, 2)
    rest = log.read_after("alpha", first[-1].published_at, None, 10)
    assert ids(first) == ["evt-0001", "evt-0002"]
    assert ids(rest) == ["evt-0003", "evt-0004", "evt-0005"]
    assert log.read_after("alpha", rest[-1].published_at, None, 10) == []


def test_since_compares_microseconds(log: EventLog) -> None:
    log.append("alpha", event(1, published_at=T0 + timedelta(microseconds=1)))
    assert ids(log.read_after("alpha", T0, None, 10)) == ["evt-0001"]
    assert log.read_after("alpha", T0 + timedelta(microseconds=1), None, 10) == []


def test_a_type_keeps_only_its_events_up_to_the_limit(log: EventLog) -> None:
    for number in range(1, 9):
        log.append("alpha", event(number, "even" if number % 2 == 0 else "odd"))
    assert ids(log.read_after("alpha", LONG_AGO, "even", 10)) == [
        "evt-0002",
        "evt-0004",
        "evt-0006",
        "evt-0008",
    ]
    assert ids(log.read_after("alpha", LONG_AGO, "odd", 2)) == ["evt-0001", "evt-0003"]
    assert log.read_after("alpha", LONG_AGO, "none-such", 10) == []


def test_reads_are_confined_to_the_team(log: EventLog) -> None:
    log.append("alpha", event(1))
    log.append("beta", event(2))
    assert ids(log.read_after("alpha", LONG_AGO, None, 10)) == ["evt-0001"]
    assert ids(log.read_after("beta", LONG_AGO, None, 10)) == ["evt-0002"]
    assert log.read_after("gamma", LONG_AGO, None, 10) == []


def test_an_event_past_the_retention_is_never_returned(log: EventLog) -> None:
    log.append("alpha", event(1, published_at=NOW - timedelta(days=8)))
    log.append("alpha", event(2, published_at=NOW - timedelta(days=6)))
    assert ids(log.read_after("alpha", LONG_AGO, None, 10)) == ["evt-0002"]
    assert ids(log.read_after("alpha", LONG_AGO, "build.done", 10)) == ["evt-0002"]


def test_sqlite_deletes_a_teams_expired_events_lazily_at_most_once_a_minute(
    backend: Backend,
) -> None:
    if not backend.is_sqlite:
        pytest.skip("DynamoDB's TTL collects expired items on its own schedule")
    from shared.domain_events.adapters.sqlite_log_rows import PURGE_EVERY_SECONDS
    from shared.orchestrator.events.adapters.sqlite import SqliteEventLog

    now = [NOW.timestamp()]
    db = backend.database()
    log = SqliteEventLog(db, clock=lambda: now[0])

    def stored() -> list[tuple[str, str]]:
        rows = db.connection().execute("SELECT team, id FROM events ORDER BY id")
        return [(row["team"], row["id"]) for row in rows]

    log.append("alpha", event(1, published_at=NOW - timedelta(days=8)))
    log.append("beta", event(2, published_at=NOW - timedelta(days=8)))
    log.append("alpha", event(3))
    # alpha's expired events went before its first append; the next is within the minute.
    assert stored() == [("alpha", "evt-0001"), ("beta", "evt-0002"), ("alpha", "evt-0003")]
    now[0] += PURGE_EVERY_SECONDS
    log.append("alpha", event(4))
    # A minute on, alpha's append removed alpha's expired event; beta's waits for beta.
    assert stored() == [("beta", "evt-0002"), ("alpha", "evt-0003"), ("alpha", "evt-0004")]
    db.close()


def test_concurrent_appends_all_land(backend: Backend, log: EventLog) -> None:
    if not backend.is_sqlite:
        pytest.skip("moto's writes are not atomic across threads (DynamoDB's are)")
    barrier = threading.Barrier(8)

    def append(worker: int) -> None:
        barrier.wait()
        for number in range(10):
            log.append("alpha", event(worker * 100 + number))

    threads = [threading.Thread(target=append, args=(w,)) for w in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(log.read_after("alpha", LONG_AGO, None, 500)) == 80


def test_an_old_snapshot_migrates_into_sqlite(backend: Backend, tmp_path: Path) -> None:
    """Items the DynamoDB adapter wrote read back the same from SQLite after `migrate_items`."""
    if backend.is_sqlite:
        pytest.skip("the source of a migration is the DynamoDB layout")
    from shared.config import names
    from shared.orchestrator.events.adapters.sqlite import SqliteEventLog
    from shared.storage.sqlite import Database

    dynamo = build_event_log()
    for number in range(1, 4):
        dynamo.append("alpha", event(number, payload={"n": number, "ratio": 0.25}))
    dynamo.append("beta", event(4, "deploy"))
    dynamo.append("alpha", event(5, published_at=NOW - timedelta(days=8)))  # expired, TTL kept
    items = list(backend.table(names.TABLE_COORDINATION).scan()["Items"])
    sqlite = SqliteEventLog(Database(tmp_path / "migrated.db"))
    other = {"pk": "TEAM#alpha", "sk": "COST#2026-01-01T00:00:00.000000Z#ab", "model": "m"}
    assert sqlite.migrate_items([*items, other]) == 5
    for team in ("alpha", "beta"):
        assert sqlite.read_after(team, LONG_AGO, None, 10) == dynamo.read_after(
            team, LONG_AGO, None, 10
        )
    assert ids(sqlite.read_after("alpha", LONG_AGO, None, 10)) == [
        "evt-0001",
        "evt-0002",
        "evt-0003",
    ]
    assert sqlite.migrate_items(items) == 5  # a repeated migration adds nothing
    assert len(sqlite.read_after("alpha", LONG_AGO, None, 10)) == 3


def test_a_version_1_event_log_moves_to_the_clustered_table_whole(tmp_path: Path) -> None:
    """Schema 2 keys the table by (team, published_at, id), as DynamoDB keys the items; a data
    folder written by version 1 (rowid table with three indexes) keeps every event."""
    from shared.domain_events.adapters.sqlite_log_rows import INSERT_EVENT, MIGRATIONS, event_row
    from shared.orchestrator.events.adapters.sqlite import SqliteEventLog
    from shared.storage.sqlite import Database

    db = Database(tmp_path / "cairn.db")
    db.migrate(MIGRATIONS[:1])
    written = [event(1), event(2, "deploy.done"), event(3, published_at=T0)]
    with db.write() as tx:
        for team, appended in (("alpha", written[0]), ("alpha", written[1]), ("beta", written[2])):
            tx.execute(INSERT_EVENT, event_row(team, appended))
    log = SqliteEventLog(db)
    assert db.schema_versions()["events"] == 2
    table = db.connection().execute("SELECT sql FROM sqlite_master WHERE name = 'events'")
    assert "WITHOUT ROWID" in table.fetchone()["sql"]
    assert log.read_after("alpha", LONG_AGO, None, 10) == written[:2]
    assert log.read_after("alpha", LONG_AGO, "deploy.done", 10) == written[1:2]
    assert log.read_after("beta", LONG_AGO, None, 10) == written[2:]
    db.close()
