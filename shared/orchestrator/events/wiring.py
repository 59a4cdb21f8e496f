"""Builds the event log and service on the configured storage (the one place adapters are
chosen)."""

from __future__ import annotations

from shared import runtime
from shared.config import names
from shared.orchestrator.events.ports import EventLog
from shared.orchestrator.events.service import EventService
from shared.storage.backends import Adapters

EVENT_LOG = Adapters[EventLog].named(
    sqlite="shared.orchestrator.events.adapters.sqlite:SqliteEventLog",
    dynamodb="shared.orchestrator.events.adapters.dynamodb:DynamoEventLog",
    table=names.TABLE_COORDINATION,
)


def build_event_log() -> EventLog:
    return runtime.backend().build(EVENT_LOG)


def build_event_service() -> EventService:
    return EventService(build_event_log())
