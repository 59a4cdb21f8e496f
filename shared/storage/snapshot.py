"""The old DynamoDB-shaped snapshot a data folder held before the SQLite stores: each SQLite
adapter's `migrate_items` takes the items that are its own, in one write transaction."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel

from shared.storage.sqlite import Database
from shared.storage.values import from_dynamo

Model = TypeVar("Model", bound=BaseModel)


@dataclass(frozen=True)
class SnapshotItem:
    """One item of the snapshot, with its team and sort key read off it."""

    item: dict[str, Any]

    @property
    def team(self) -> str:
        return str(self.item.get("team") or str(self.item.get("pk", "")).removeprefix("TEAM#"))

    @property
    def sort_key(self) -> str:
        return str(self.item.get("sk", ""))

    def key_after(self, prefix: str) -> str:
        """The sort key without the record type's prefix: the record's id."""
        return self.sort_key.removeprefix(prefix)

    def record(self, model: type[Model]) -> Model:
        """The item's attributes that are `model`'s fields, as that model."""
        return model.model_validate(
            {k: from_dynamo(v) for k, v in self.item.items() if k in model.model_fields}
        )


Write = Callable[[sqlite3.Connection, SnapshotItem], None]


def migrate_each(
    db: Database, items: Iterable[dict[str, Any]], writers: Mapping[str, Write]
) -> int:
    """Write each item whose sort key starts with one of `writers`' prefixes (its store's
    record types) with that prefix's writer, all in one write transaction: all or nothing.
    How many were written."""
    written = 0
    with db.write() as tx:
        for item in map(SnapshotItem, items):
            for prefix, write in writers.items():
                if item.sort_key.startswith(prefix):
                    write(tx, item)
                    written += 1
                    break
    return written
