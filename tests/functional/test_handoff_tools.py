"""Seed 002's handoff tools on moto: store, list, claim — one conditional write decides a race."""

from __future__ import annotations

import threading
from typing import Any

import boto3

from shared.config import names
from shared.config.settings import Settings
from tests.functional.conftest import Harness
from tests.unit.test_handoff_sections import VALID


def _store(gateway: Harness, token: str, **extra: Any) -> dict[str, Any]:
    result = gateway.call(
        token, "store_handoff", {"title": "billing export", "document_md": VALID, **extra}
    )
    assert result["isError"] is False, result
    handoff: dict[str, Any] = result["handoff"]
    return handoff


def _items(settings: Settings) -> list[dict[str, Any]]:
    table = boto3.resource("dynamodb").Table(settings.table(names.TABLE_HANDOFFS))
    return table.scan()["Items"]


def test_a_stored_handoff_is_listed_then_claimed_with_its_document(harness: Harness) -> None:
    author = harness.token(team="alpha", agent_id="agent-a")
    taker = harness.token(team="alpha", agent_id="agent-b")

    stored = _store(harness, author, project_key="billing", cwd="/srv/app", harness="codex")
    listed = harness.call(taker, "list_handoffs", {})["handoffs"]
    claimed = harness.call(
        taker,
        "claim_handoff",
        {"handoff_id": stored["id"], "claiming_harness": "claude-code", "claiming_cwd": "/w"},
    )

    assert stored["status"] == "open"
    assert stored["created_by"] == "agent-a"
    assert "document_md" not in stored
    assert [h["id"] for h in listed] == [stored["id"]]
    handoff = claimed["handoff"]
    assert handoff["document_md"] == VALID
    assert handoff["status"] == "claimed"
    assert handoff["claim"]["agent_id"] == "agent-b"
    assert handoff["claim"]["harness"] == "claude-code"
    assert harness.call(taker, "list_handoffs", {})["handoffs"] == []


def test_a_second_claim_is_a_409_conflict_naming_who_holds_it(harness: Harness) -> None:
    author = harness.token(team="alpha", agent_id="agent-a")
    first = harness.token(team="alpha", agent_id="agent-b")
    second = harness.token(team="alpha", agent_id="agent-c")
    handoff_id = _store(harness, author)["id"]
    harness.call(first, "claim_handoff", {"handoff_id": handoff_id})

    lost = harness.call(second, "claim_handoff", {"handoff_id": handoff_id})

    assert lost["isError"] is True
    error: dict[str, Any] = lost["error"]
    assert error["code"] == "conflict"
    assert error["status"] == 409
    assert error["holder"]["agent_id"] == "agent-b"
    assert "claimed_at" in error["holder"]
    assert "agent-b" in error["message"]


def test_claiming_an_unknown_id_is_a_404(harness: Harness) -> None:
    token = harness.token(team="alpha")

    result = harness.call(token, "claim_handoff", {"handoff_id": "hof_nope"})

    assert result["isError"] is True
    assert result["error"] == {
        "code": "not_found",
        "message": "`handoff_id`: no handoff with id 'hof_nope' in your team; use an id "
        "from list_handoffs",
        "field": "handoff_id",
        "status": 404,
    }


def test_concurrent_claims_have_exactly_one_winner(harness: Harness) -> None:
    author = harness.token(team="alpha")
    handoff_id = _store(harness, author)["id"]
    tokens = [harness.token(team="alpha", agent_id=f"agent-{i}") for i in range(8)]
    outcomes: list[bool] = []
    barrier = threading.Barrier(len(tokens))

    def claim(token: str) -> None:
        barrier.wait()
        result = harness.call(token, "claim_handoff", {"handoff_id": handoff_id})
        outcomes.append(not result["isError"])

    threads = [threading.Thread(target=claim, args=(t,)) for t in tokens]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(outcomes) == [False] * 7 + [True]


def test_another_team_can_neither_list_nor_claim_a_handoff(harness: Harness) -> None:
    alpha = harness.token(team="alpha")
    beta = harness.token(team="beta")
    handoff_id = _store(harness, alpha)["id"]

    assert harness.call(beta, "list_handoffs", {})["handoffs"] == []
    result = harness.call(beta, "claim_handoff", {"handoff_id": handoff_id})

    assert result["error"]["code"] == "not_found"
    assert [h["id"] for h in harness.call(alpha, "list_handoffs", {})["handoffs"]] == [handoff_id]


def test_a_document_without_the_five_sections_is_rejected_and_nothing_is_written(
    harness: Harness, aws: Settings
) -> None:
    token = harness.token(team="alpha")

    result = harness.call(
        token,
        "store_handoff",
        {"title": "t", "document_md": VALID.replace("## Journey", "## Travels")},
    )

    assert result["isError"] is True
    assert result["error"]["field"] == "document_md"
    assert "Journey" in result["error"]["message"]
    assert _items(aws) == []


def test_list_filters_by_project_cwd_and_harness_newest_first(harness: Harness) -> None:
    token = harness.token(team="alpha")
    old = _store(harness, token, project_key="p1", cwd="/a", harness="codex")["id"]
    new = _store(harness, token, project_key="p1", cwd="/b", harness="codex")["id"]
    other = _store(harness, token, project_key="p2", cwd="/a", harness="claude-code")["id"]

    def ids(**filters: Any) -> list[str]:
        handoffs = harness.call(token, "list_handoffs", filters)["handoffs"]
        return [h["id"] for h in handoffs]

    assert ids(project_key="p1") == [new, old]
    assert ids(project_key="p1", cwd="/a") == [old]
    assert ids(harness="claude-code") == [other]
    assert ids() == [other, new, old]
    assert ids(limit=2) == [other, new]
    assert ids(project_key="p3") == []


def test_a_claim_records_the_harness_chosen_agent_id_beside_the_token_holder(
    harness: Harness,
) -> None:
    author = harness.token(team="alpha")
    taker = harness.token(team="alpha", agent_id="agent-b")
    late = harness.token(team="alpha", agent_id="agent-c")
    handoff_id = _store(harness, author)["id"]
    described = {
        "claiming_agent_id": "claude-code:session-42",
        "claiming_harness": "claude-code",
        "claiming_source_ref": "run-42",
    }

    claimed = harness.call(taker, "claim_handoff", {"handoff_id": handoff_id, **described})
    lost = harness.call(late, "claim_handoff", {"handoff_id": handoff_id})

    assert claimed["isError"] is False
    claim = claimed["handoff"]["claim"]  # type: ignore[index]
    assert claim["agent_id"] == "agent-b"  # the holder to trust: the token's agent
    assert claim["claiming_agent_id"] == "claude-code:session-42"
    assert claim["harness"] == "claude-code"
    assert claim["source_ref"] == "run-42"
    holder = lost["error"]["holder"]  # type: ignore[index]
    assert holder["agent_id"] == "agent-b"
    assert holder["claiming_agent_id"] == "claude-code:session-42"


def test_an_author_argument_is_refused(harness: Harness) -> None:
    token = harness.token(team="alpha")

    result = harness.call(
        token, "store_handoff", {"title": "t", "document_md": VALID, "agent_id": "someone"}
    )

    assert result["isError"] is True
    assert result["error"]["field"] == "agent_id"
