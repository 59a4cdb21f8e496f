"""The start every SQLite store with a transactional outbox shares: its tables, the event log's
tables, and the outbox that writes a change's domain events inside the change's transaction."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import ClassVar

from shared.domain_events.adapters.sqlite_outbox import EVENT_LOG_MIGRATIONS, SqliteOutbox
from shared.storage.sqlite import Database, Migration


class SqliteOutboxStore:
    """Base of a store whose writes carry domain events; a subclass names its `migrations`.

    >>> class SqliteThingStore(SqliteOutboxStore):  # doctest: +SKIP
    ...     migrations = MIGRATIONS
    """

    migrations: ClassVar[Sequence[Migration]]

    def __init__(self, db: Database, clock: Callable[[], float] = time.time) -> None:
        self._db = db
        self._outbox = SqliteOutbox(clock)
        db.migrate(self.migrations)
        db.migrate(EVENT_LOG_MIGRATIONS)  # the outbox: events commit with their change
