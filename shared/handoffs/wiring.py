"""Builds the handoff service on the configured storage (the one place adapters are chosen)."""

from __future__ import annotations

from shared import runtime
from shared.config import names
from shared.domain_events.wiring import build_domain_events, build_dynamo_outbox
from shared.handoffs.ports import HandoffStore
from shared.handoffs.service import HandoffService


def build_handoff_store() -> HandoffStore:
    if runtime.settings().storage == "sqlite":
        from shared.handoffs.adapters.sqlite import SqliteHandoffStore

        return SqliteHandoffStore(runtime.database())
    from shared.handoffs.adapters.dynamodb import DynamoHandoffStore

    return DynamoHandoffStore(runtime.table(names.TABLE_HANDOFFS), build_dynamo_outbox())


@runtime.cached
def build_handoff_service() -> HandoffService:
    return HandoffService(build_handoff_store(), events=build_domain_events())
