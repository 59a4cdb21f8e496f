"""cairn's orchestrator feeds the team's knowledge: a finished task is a `workflow` event."""

from __future__ import annotations

from typing import Any

import pytest

from shared.app import wiring
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


def test_an_ended_workflow_is_a_workflow_event_in_its_steps_session(
    knowledge: Knowledge, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(wiring, "build_knowledge_service", lambda: knowledge.service)
    harness = knowledge.harness
    admin = knowledge.token()
    agent = harness.token(team="alpha", agent_id="builder")
    steps = {"steps": [{"name": "compile"}, {"name": "ship", "depends_on": ["compile"]}]}
    ids: dict[str, str] = {}
    for name in ("release-zz", "doomed-zz"):
        created = knowledge.call(admin, "workflow.create", {"name": name, "definition": steps})
        assert created["isError"] is False, created
        ids[name] = created["structuredContent"]["workflow"]["id"]
        started = knowledge.call(admin, "workflow.start", {"workflow_id": ids[name]})
        assert started["isError"] is False, started
    for step in ("compile", "ship"):  # release-zz runs to the end
        polled = knowledge.call(agent, "task.poll", {})["structuredContent"]["tasks"]
        task = next(
            t for t in polled if t["name"] == step and t["workflow_id"] == ids["release-zz"]
        )
        knowledge.call(agent, "task.claim", {"task_id": task["id"]})
        done = knowledge.call(
            agent, "task.complete", {"task_id": task["id"], "output_summary": "ok"}
        )
        assert done["isError"] is False, done
    cancelled = knowledge.call(admin, "workflow.cancel", {"workflow_id": ids["doomed-zz"]})
    assert cancelled["isError"] is False, cancelled

    events = knowledge.ok(admin, "search_events", {"source": "workflow", "query": "Workflow '"})
    assert sorted((e["summary"].split(":")[0], e["detail"]) for e in events) == [
        ("Workflow 'doomed-zz' cancelled", "status=cancelled"),
        ("Workflow 'release-zz' completed", "status=completed"),
    ]
    assert (
        "2 of 2 steps completed" in next(e for e in events if "release" in e["summary"])["summary"]
    )
    # The workflow's end joins its steps' task events in one knowledge node.
    nodes = knowledge.ok(admin, "search_hybrid", {"query": "release-zz", "source": "workflow"})
    release = next(n for n in nodes if "release-zz" in n["embed_text"])
    assert len(release["linked_event_ids"]) == 3  # compile, ship, the workflow's end
    assert release["outcome"] == "success"
