"""Builds the documents store on the configured storage (the one place its adapter is chosen)."""

from __future__ import annotations

import time
from collections.abc import Callable

from shared import runtime
from shared.config import names
from shared.search.ports import DocumentStore


def build_document_store(clock: Callable[[], float] = time.time) -> DocumentStore:
    """The documents store of `runtime.settings().storage`; `clock` dates tombstones."""
    if runtime.settings().storage == "sqlite":
        from shared.search.adapters.sqlite_documents import SqliteDocumentStore

        return SqliteDocumentStore(runtime.database(), clock)
    from shared.search.adapters.dynamodb import DynamoDocumentStore

    return DynamoDocumentStore(runtime.table(names.TABLE_DOCUMENTS), clock)
