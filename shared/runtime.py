"""Process-wide wiring: the settings and the AWS clients every adapter shares.

Lambda builds these once per container (warm invocations reuse the clients); local mode and the
tests call `configure` to point everything at their own settings, which also drops the caches.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import boto3

from shared.config.settings import Settings
from shared.storage.backends import Backend, DynamoBackend, SqliteBackend

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.service_resource import DynamoDBServiceResource, Table

    from shared.storage.sqlite import Database

T = TypeVar("T")
_settings: Settings | None = None
_caches: list[Callable[[], Any]] = []
_stoppers: list[Callable[[], None]] = []


def cached(factory: Callable[[], T]) -> Callable[[], T]:
    """Build once per process (per `configure`): the cached-factory pattern for adapters."""
    wrapped = functools.cache(factory)
    _caches.append(wrapped)
    return wrapped


def on_reconfigure(stop: Callable[[], None]) -> None:
    """Run `stop` before the next `configure` closes the database.

    Background workers that use the stores (local detection and enrichment) register how to
    finish their queued work and end: a thread still writing to the SQLite database when it is
    closed crashes the whole process (a segfault, not an exception).
    """
    _stoppers.append(stop)


def configure(settings: Settings) -> None:
    """Use `settings` from now on and forget every client and service built before."""
    global _settings
    stoppers = list(_stoppers)
    _stoppers.clear()
    for stop in stoppers:
        stop()
    _settings = settings
    if database.cache_info().currsize:  # type: ignore[attr-defined]
        database().close()
    for cache in _caches:
        cache.cache_clear()  # type: ignore[attr-defined]


def settings() -> Settings:
    global _settings
    if _settings is None:
        _settings = Settings.from_env()
    return _settings


@cached
def dynamodb() -> DynamoDBServiceResource:
    return boto3.resource("dynamodb", region_name=settings().region)


@cached
def database() -> Database:
    """The embedded default's database in the data folder (`storage = "sqlite"`)."""
    data_dir = settings().data_dir
    if data_dir is None:
        raise RuntimeError("the sqlite storage needs a data folder (Settings.data_dir)")
    # Here, not at the top: a Lambda function (DynamoDB) never loads sqlite3 at init.
    from shared.storage.sqlite import open_database

    return open_database(data_dir)


def table(logical_id: str) -> Table:
    return dynamodb().Table(settings().table(logical_id))


@cached
def backend() -> Backend:
    """The storage every store of this process is on, chosen here once per `configure`: the
    one place that reads `settings().storage`."""
    if settings().storage == "sqlite":
        return SqliteBackend(database)
    return DynamoBackend(table)
