"""cairn's orchestrator feeds the team's knowledge: a finished task is a `workflow` event."""

from __future__ import annotations

from typing import Any

import pytest

from shared.knowledge import wiring
from tests.functional.knowledge.conftest import Knowledge


def test_a_completed_and_a_failed_task_become_workflow_events(
    knowledge: Knowledge, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(wiring, "build_knowledge_service", lambda: knowledge.service)
    admin = knowledge.token()
    registered: dict[str, Any] = knowledge.call(
        admin,
        "agent.register",
        {"name": "builder", "agent_type": "worker", "capabilities": ["build"]},
    )["structuredContent"]
    assert "token" in registered, registered
    agent_token = registered["token"]
    outcomes = {"nightly export": ("task.complete", {"output_summary": "exported 42 invoices"})}
    outcomes["migrate invoices"] = ("task.fail", {"error_message": "lock timeout on invoices"})
    for name, (verb, extra) in outcomes.items():
        created = knowledge.call(
            admin, "task.create", {"name": name, "requires_capability": "build"}
        )
        assert created["isError"] is False, created
        task_id = created["structuredContent"]["id"]
        assert knowledge.call(agent_token, "task.claim", {"task_id": task_id})["isError"] is False
        finished = knowledge.call(agent_token, verb, {"task_id": task_id, **extra})
        assert finished["isError"] is False, finished
    events = knowledge.ok(admin, "search_events", {"source": "workflow"})
    summaries = sorted(e["summary"] for e in events)
    assert summaries == [
        "Task 'migrate invoices' failed: lock timeout on invoices",
        "Task 'nightly export' completed: exported 42 invoices",
    ]
    assert {e["detail"] for e in events} == {"status=completed", "status=failed"}
    nodes = knowledge.ok(admin, "search_hybrid", {"query": "invoices", "source": "workflow"})
    assert {n["outcome"] for n in nodes} == {"success", "failure"}
