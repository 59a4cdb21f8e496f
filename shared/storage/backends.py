"""The storage a process runs on, chosen once: the embedded SQLite database or DynamoDB.

Every store is a port with two adapters. A group declares the pair once, as `Adapters`, each
side built from what its backend holds (the database, or a table lookup); the process's
`Backend` (`shared.runtime.backend()`, picked from the settings once per `configure`) builds
the side it stands for. No wiring asks which backend it is on.

>>> HANDOFFS = Adapters(sqlite=sqlite_handoffs, dynamodb=dynamo_handoffs)  # doctest: +SKIP
>>> runtime.backend().build(HANDOFFS)  # doctest: +SKIP
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, TypeVar, cast

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.service_resource import Table

    from shared.storage.sqlite import Database

T = TypeVar("T")
# A DynamoDB table by its logical id (`shared.config.names.TABLE_*`), resolved to the stack's name.
TableLookup = Callable[[str], "Table"]


@dataclass(frozen=True)
class Adapters(Generic[T]):
    """One port's two adapters, each built from what its backend holds."""

    sqlite: Callable[[Database], T]
    dynamodb: Callable[[TableLookup], T]
    # `named`'s "module:Class" references (sqlite, dynamodb), checked by a test.
    references: tuple[str, str] | None = None

    @classmethod
    def named(cls, *, sqlite: str, dynamodb: str, table: str) -> Adapters[T]:
        """The usual pair: `sqlite` built on the database, `dynamodb` on its `table`, each
        named `"module:Class"` and imported at its first build (a Lambda function never loads
        the SQLite side, nor a local server the DynamoDB one)."""

        def on_database(database: Database) -> T:
            return cast(T, _load(sqlite)(database))

        def on_tables(tables: TableLookup) -> T:
            return cast(T, _load(dynamodb)(tables(table)))

        return cls(sqlite=on_database, dynamodb=on_tables, references=(sqlite, dynamodb))


def _load(reference: str) -> Any:
    """The class `"module:Class"` names (importlib is loaded in every process already; pkgutil's
    resolver would cost each Lambda function's start a module more)."""
    module, _, name = reference.partition(":")
    return getattr(importlib.import_module(module), name)


class Backend(Protocol):
    """Builds the adapter of every port on one storage."""

    @property
    def name(self) -> Literal["sqlite", "dynamodb"]: ...

    def build(self, adapters: Adapters[T]) -> T: ...


@dataclass(frozen=True)
class SqliteBackend:
    """The embedded default: every store in one SQLite database in the data folder."""

    # Opened at the first adapter built, not when the backend is chosen.
    database: Callable[[], Database]

    @property
    def name(self) -> Literal["sqlite"]:
        return "sqlite"

    def build(self, adapters: Adapters[T]) -> T:
        return adapters.sqlite(self.database())


@dataclass(frozen=True)
class DynamoBackend:
    """AWS: each store in its DynamoDB table."""

    tables: TableLookup

    @property
    def name(self) -> Literal["dynamodb"]:
        return "dynamodb"

    def build(self, adapters: Adapters[T]) -> T:
        return adapters.dynamodb(self.tables)
