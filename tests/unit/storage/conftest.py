"""Backends for the storage contract suites: every store's adapters against the same tests.

`backend` is parametrized: `dynamodb` (the AWS adapter on moto, its tables made from the CDK's
definitions, fresh for each test: `tests.fake_aws`) and `sqlite` (the embedded adapter on a
database file in tmp_path). A contract test asks `backend.open(...)` for the store under test, so
the same inputs run on both.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import pytest
from moto.core.botocore_stubber import BotocoreStubber
from pydantic import BaseModel

from shared import runtime
from shared.config.settings import Settings
from shared.storage.pages import BadCursor
from shared.storage.sqlite import Database
from shared.storage.values import UnstorableValue
from tests.fake_aws import fake_aws


@dataclass
class Backend:
    """One storage backend, configured for `shared.runtime` (what the wiring modules read)."""

    name: str
    settings: Settings
    path: Path

    @property
    def is_sqlite(self) -> bool:
        return self.name == "sqlite"

    def database(self) -> Database:
        """A fresh connection set on the same file: what a second process would open."""
        return Database(self.path / "cairn.db")

    def table(self, logical_id: str) -> Any:
        return runtime.table(logical_id)


T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)


def at_once(racer: Callable[[T], None], contenders: Iterable[T]) -> None:
    """`racer(contender)` for each contender in a thread of its own, all released together by
    a barrier; back once every one has finished."""
    everyone = list(contenders)
    barrier = threading.Barrier(len(everyone))

    def released(contender: T) -> None:
        barrier.wait()
        racer(contender)

    threads = [threading.Thread(target=released, args=(c,)) for c in everyone]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def ids_of_every_page(list_page: Callable[[str | None], Any]) -> list[str]:
    """The ids of every item `list_page(cursor)` lists, following each page's `next_cursor`
    from the first page (cursor None) to the one without."""
    ids: list[str] = []
    cursor: str | None = None
    while True:
        page = list_page(cursor)
        ids += [item.id for item in page.items]
        if page.next_cursor is None:
            return ids
        cursor = page.next_cursor


def assert_second_page_is_last(list_page: Callable[[str | None], Any], ids: list[str]) -> None:
    """`list_page(cursor)`'s first page has a cursor, and the page it leads to lists `ids` and
    has none."""
    first = list_page(None)
    assert first.next_cursor is not None
    second = list_page(first.next_cursor)
    assert [item.id for item in second.items] == ids
    assert second.next_cursor is None


def assert_cursors_stay_in_their_listing(list_page: Callable[[str, str | None], Any]) -> None:
    """A cursor of team alpha's `list_page(team, cursor)` is refused for team beta, and so is a
    string that is no cursor."""
    cursor = list_page("alpha", None).next_cursor
    assert cursor is not None
    for team, foreign in (("beta", cursor), ("alpha", "not-a-cursor")):
        with pytest.raises(BadCursor):
            list_page(team, foreign)


@pytest.fixture(params=[pytest.param("dynamodb", marks=pytest.mark.moto), "sqlite"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if request.param == "sqlite":
        settings = Settings(environment="test", storage="sqlite", data_dir=tmp_path)
        runtime.configure(settings)
        yield Backend("sqlite", settings, tmp_path)
        runtime.configure(Settings())
        return
    with fake_aws():
        settings = Settings(environment="test", storage="dynamodb", data_dir=tmp_path)
        runtime.configure(settings)
        yield Backend("dynamodb", settings, tmp_path)
        runtime.configure(Settings())


@pytest.fixture
def atomic_moto(backend: Backend, monkeypatch: pytest.MonkeyPatch) -> None:
    """moto checks a request's condition and writes in Python, not atomically, where DynamoDB
    applies each request (a conditional write, a transaction) atomically: serialize moto's
    requests so that threads race as they would on DynamoDB (their calls interleave freely;
    each call is one atomic step)."""
    if backend.is_sqlite:
        return
    lock = threading.Lock()
    original: Callable[..., Any] = BotocoreStubber.process_request

    def one_at_a_time(self: BotocoreStubber, request: Any) -> Any:
        with lock:
            return original(self, request)

    monkeypatch.setattr(BotocoreStubber, "process_request", one_at_a_time)


# 100k four-byte characters: within the models' length limits, over DynamoDB's 400 KB item.
OVERSIZED_TEXT = "\U0001f600" * 100_000


def assert_refused_and_unstored(store: Any, record: Any, field: str) -> None:
    """`store.create` refuses `record` (too large for a DynamoDB item) naming `field`, and
    nothing of it is stored: the SQLite adapter refuses what the DynamoDB one must."""
    with pytest.raises(UnstorableValue) as refused:
        store.create("alpha", record)
    assert refused.value.field == field
    assert store.get("alpha", record.id) is None


def numbered(model: type[M], record_id: str, at: datetime, fields: dict[str, object]) -> M:
    """`model` read from `fields`, with id `record_id`, created and updated `at` by agent-a
    unless `fields` says otherwise."""
    return model.model_validate(
        {"id": record_id, "created_at": at, "updated_at": at, "created_by": "agent-a", **fields}
    )
