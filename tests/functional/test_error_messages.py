"""Every tool error names its argument and the fix, with the details in structuredContent too."""

from __future__ import annotations

from typing import Any

import pytest

from tests.functional.conftest import Harness

HANDOFF_DOCUMENT = (
    "## Start & intent\nx\n\n## Journey\nx\n\n## Current state\nx\n\n## What’s left\nx\n\n"
    "## Open questions\nx\n"
)
FUTURE_AND_TTL = {"key": "k", "content": "c", "ttl_days": 1, "expires_at": "2999-01-01T00:00:00Z"}

# (tool, arguments, the argument the error must name). Each call fails on a fresh team.
FAILING_CALLS: list[tuple[str, dict[str, Any], str]] = [
    ("memory_get", {}, "key"),
    (
        "memory_put",
        {"key": "k", "content": "c", "expires_at": "2000-01-01T00:00:00Z"},
        "expires_at",
    ),
    ("memory_put", FUTURE_AND_TTL, "expires_at"),
    ("memory_search", {"query": "x", "limit": 500}, "limit"),
    # seed 002's `confidence` is text ("high", "tentative"), never a number.
    ("remember", {"title": "t", "body": "b", "confidence": 0.9}, "confidence"),
    ("flag_memory", {"memory_id": "mem_nope", "reason": "wrong"}, "memory_id"),
    (
        "engram_create",
        {"wallet_address": "0xa", "engram_type": "preference", "key": "k", "content": "{"},
        "content",
    ),
    ("engram_update", {"id": "mem_nope", "content": "{}"}, "id"),
    ("engram_delete", {"id": "mem_nope"}, "id"),
    ("store_handoff", {"title": "t", "document_md": "## Journey\nonly"}, "document_md"),
    ("claim_handoff", {"handoff_id": "hof_nope"}, "handoff_id"),
    # The caller's own name for itself is recorded, not checked: the id is what is wrong.
    ("claim_handoff", {"handoff_id": "hof_nope", "claiming_agent_id": "someone"}, "handoff_id"),
    ("sync", {"source": "nowhere"}, "source"),
    ("embeddings_build", {"source": "memory"}, "source"),
    ("search", {"query": "x", "cursor": "not-a-cursor"}, "cursor"),
    ("agent.register", {"name": "a", "agent_type": "w", "scopes": ["admin"]}, "scopes"),
    ("agent.heartbeat", {"agent_id": "agt_nope"}, "agent_id"),
    ("task.claim", {"task_id": "tsk_nope"}, "task_id"),
    ("task.complete", {"task_id": "tsk_nope"}, "task_id"),
    ("task.cancel", {"task_id": "tsk_nope"}, "task_id"),
    ("task.delegate", {"parent_task_id": "tsk_nope", "name": "sub"}, "parent_task_id"),
    ("task.create", {"name": "t", "depends_on": [{"task_id": "tsk_nope"}]}, "depends_on"),
    ("artifact.list", {}, "task_id"),
    (
        "artifact.put",
        {"task_id": "tsk_nope", "name": "n", "artifact_type": "log", "content": "c"},
        "task_id",
    ),
]


def _error(harness: Harness, token: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = harness.call(token, tool, arguments)
    assert result["isError"] is True, (tool, result)
    return result


@pytest.mark.parametrize(("tool", "arguments", "field"), FAILING_CALLS, ids=lambda v: str(v)[:40])
def test_each_tool_error_names_its_argument_and_a_fix(
    harness: Harness, tool: str, arguments: dict[str, Any], field: str
) -> None:
    admin = harness.token(team=f"errors-{tool}", scopes=("admin",))

    result = _error(harness, admin, tool, arguments)

    message = result["content"][0]["text"]
    assert f"`{field}`" in message, message
    assert ";" in message or "(got" in message, f"no fix given: {message}"
    details = result["structuredContent"]["error"]
    assert details == result["error"]
    assert details["field"] == field
    assert details["message"] == message


def test_not_found_carries_status_404_in_structured_content(harness: Harness) -> None:
    admin = harness.token(team="errors-404")

    result = _error(harness, admin, "claim_handoff", {"handoff_id": "hof_nope"})

    assert result["structuredContent"] == {
        "error": {
            "code": "not_found",
            "message": "`handoff_id`: no handoff with id 'hof_nope' in your team; use an id "
            "from list_handoffs",
            "field": "handoff_id",
            "status": 404,
        }
    }


def test_a_lost_claim_carries_the_holder_in_structured_content(harness: Harness) -> None:
    admin = harness.token(team="errors-409")
    stored = harness.call(admin, "store_handoff", {"title": "t", "document_md": HANDOFF_DOCUMENT})
    handoff_id = stored["structuredContent"]["handoff"]["id"]
    harness.call(admin, "claim_handoff", {"handoff_id": handoff_id})

    details = _error(harness, admin, "claim_handoff", {"handoff_id": handoff_id})[
        "structuredContent"
    ]["error"]

    assert details["status"] == 409
    assert details["field"] == "handoff_id"
    assert details["holder"]["agent_id"].startswith("token:")
    assert "list_handoffs" in details["message"]


def test_finishing_a_task_someone_else_holds_says_complete_and_fail_not_completed(
    harness: Harness,
) -> None:
    owner = harness.token(team="errors-verbs", scopes=("admin",))
    task_id = harness.call(owner, "task.create", {"name": "t"})["structuredContent"]["id"]

    completed = _error(harness, owner, "task.complete", {"task_id": task_id})
    failed = _error(harness, owner, "task.fail", {"task_id": task_id})

    assert f"cannot complete task '{task_id}'" in completed["content"][0]["text"]
    assert f"cannot fail task '{task_id}'" in failed["content"][0]["text"]
