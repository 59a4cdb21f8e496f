"""Builds the event log and service on the configured storage (the one place adapters are
chosen)."""

from __future__ import annotations

from shared import runtime
from shared.config import names
from shared.orchestrator.events.ports import EventLog
from shared.orchestrator.events.service import EventService


def build_event_log() -> EventLog:
    if runtime.settings().storage == "sqlite":
        from shared.orchestrator.events.adapters.sqlite import SqliteEventLog

        return SqliteEventLog(runtime.database())
    from shared.orchestrator.events.adapters.dynamodb import DynamoEventLog

    return DynamoEventLog(runtime.table(names.TABLE_COORDINATION))


def build_event_service() -> EventService:
    return EventService(build_event_log())
