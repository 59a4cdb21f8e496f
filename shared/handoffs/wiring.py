"""Builds the handoff service on the configured storage (the one place adapters are chosen)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from shared import runtime
from shared.config import names
from shared.domain_events.wiring import build_domain_events, build_dynamo_outbox
from shared.handoffs.ports import HandoffStore
from shared.handoffs.service import HandoffService
from shared.storage.backends import Adapters, TableLookup

if TYPE_CHECKING:
    from shared.storage.sqlite import Database


def _sqlite_handoff_store(database: Database) -> HandoffStore:
    from shared.handoffs.adapters.sqlite import SqliteHandoffStore

    return SqliteHandoffStore(database)


def _dynamo_handoff_store(tables: TableLookup) -> HandoffStore:
    from shared.handoffs.adapters.dynamodb import DynamoHandoffStore

    return DynamoHandoffStore(tables(names.TABLE_HANDOFFS), build_dynamo_outbox())


HANDOFF_STORE = Adapters(sqlite=_sqlite_handoff_store, dynamodb=_dynamo_handoff_store)


def build_handoff_store() -> HandoffStore:
    return runtime.backend().build(HANDOFF_STORE)


@runtime.cached
def build_handoff_service() -> HandoffService:
    return HandoffService(build_handoff_store(), events=build_domain_events())
