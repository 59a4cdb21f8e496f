"""How a service makes a domain event: an id, the clock's time, its fields; nothing recorded
until a store writes it with its change (the outbox contract tests cover that part)."""

from __future__ import annotations

from shared.domain_events.emitter import DomainEvents
from shared.domain_events.models import Kind


def test_an_event_gets_an_id_the_clock_time_and_its_fields() -> None:
    event = DomainEvents(clock=lambda: 1_767_225_600.0).event(
        "acme", Kind.HANDOFF_STORED, "claude-1", handoff_id="hof_1"
    )

    assert event.detail_type == "Handoff Stored"
    assert event.id.startswith("evt-")
    assert event.detail()["time"] == "2026-01-01T00:00:00+00:00"
    assert event.detail()["handoff_id"] == "hof_1"


def test_two_events_of_one_change_get_two_ids() -> None:
    make = DomainEvents()
    first = make.event("acme", Kind.TASK_CREATED, "builder", task_id="tsk_1")
    second = make.event("acme", Kind.TASK_CREATED, "builder", task_id="tsk_1")
    assert first.id != second.id
