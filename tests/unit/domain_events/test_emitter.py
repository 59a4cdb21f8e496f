"""What a service's emit does when the sink fails: the change stands, the loss is logged."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import pytest

from shared.domain_events.emitter import DomainEvents
from shared.domain_events.models import DomainEvent, Kind


class Recording:
    def __init__(self) -> None:
        self.events: list[DomainEvent] = []

    def emit(self, events: Sequence[DomainEvent]) -> None:
        self.events.extend(events)


class Broken:
    def emit(self, events: Sequence[DomainEvent]) -> None:
        raise ConnectionError("the log is unreachable")


def test_an_event_gets_an_id_the_clock_time_and_its_fields() -> None:
    sink = Recording()

    DomainEvents(sink, clock=lambda: 1_767_225_600.0).emit(
        "acme", Kind.HANDOFF_STORED, "claude-1", handoff_id="hof_1"
    )

    (event,) = sink.events
    assert event.detail_type == "Handoff Stored"
    assert event.id.startswith("evt-")
    assert event.detail()["time"] == "2026-01-01T00:00:00+00:00"
    assert event.detail()["handoff_id"] == "hof_1"


def test_a_failing_sink_is_logged_with_ids_and_never_raised(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.ERROR, logger="cairn.domain_events"):
        DomainEvents(Broken()).emit("acme", Kind.TASK_FAILED, "builder", task_id="tsk_1")

    (record,) = caplog.records
    assert record.getMessage() == "a domain event was not recorded"
    assert record.domain_event["task_id"] == "tsk_1"  # type: ignore[attr-defined]
    assert record.domain_event["kind"] == Kind.TASK_FAILED  # type: ignore[attr-defined]


def test_without_a_sink_nothing_is_recorded_and_nothing_fails() -> None:
    DomainEvents().emit("acme", Kind.TASK_CREATED, "builder", task_id="tsk_1")
