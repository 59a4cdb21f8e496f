"""Seed 000's advanced memory tools on moto through the gateway: structured writes, queries,
retraction, supersession, proposals and review, conflicts and duplicates — and the older
surfaces (memory_get, recall, memory_search, search, engrams) honouring the states."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from shared.config.settings import Settings
from shared.memory.wiring import build_detection_queue, build_detector
from tests.functional.conftest import PEPPER, Harness, ok, on_storage
from tests.jsonrpc import tools_call

V1 = "2026-01-01T00:00:00+00:00"
V2 = "2026-06-01T00:00:00+00:00"


@pytest.fixture(params=["dynamodb", "sqlite"])
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Harness]:
    """The gateway in-process on the store named by the parameter: the lifecycle's state lives
    in each adapter (history, status, conditional transitions), so the bi-temporal and
    visibility tests run on both."""
    settings = Settings(
        environment="test", token_pepper=PEPPER, data_dir=tmp_path, storage=request.param
    )
    with on_storage(settings):
        yield Harness.over(settings)


def failed(harness: Harness, token: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = harness.call(token, tool, arguments)
    assert result["isError"] is True, result
    error: dict[str, Any] = result["error"]
    return error


def write(harness: Harness, token: str, content: str, **fields: Any) -> dict[str, Any]:
    memory: dict[str, Any] = ok(harness, token, "memory_write", {"content": content, **fields})[
        "memory"
    ]
    return memory


def query_ids(harness: Harness, token: str, **arguments: Any) -> list[str]:
    memories = ok(harness, token, "memory_query", arguments)["memories"]
    return [m["id"] for m in memories]


def drain() -> None:
    detection = build_detection_queue()
    assert detection is not None
    detection.drain()


def at(moment: str) -> datetime:
    return datetime.fromisoformat(moment.replace("Z", "+00:00"))


def between(earlier: str, later: str) -> str:
    first, second = at(earlier), at(later)
    assert first < second
    return (first + (second - first) / 2).isoformat()


def test_memory_write_stores_a_structured_record_authored_by_the_token(harness: Harness) -> None:
    token = harness.token(team="alpha", agent_id="agent-a")

    memory = write(
        harness,
        token,
        "Production deploys are frozen from Friday 17:00 UTC.",
        subject="deploy freeze",
        kind="decision",
        tags=["release"],
        sources=[{"type": "url", "ref": "https://wiki.example/adr/12"}],
        confidence=0.8,
        valid_from=V1,
    )

    assert memory["subject"] == "deploy freeze"
    assert memory["kind"] == "decision"
    assert memory["sources"] == [{"type": "url", "ref": "https://wiki.example/adr/12"}]
    assert memory["confidence"] == 0.8
    assert at(memory["valid_from"]) == at(V1)
    assert memory["created_by"] == "agent-a"
    assert "status" not in memory  # filed: seed 000's shape
    assert [e["action"] for e in memory["history"]] == ["written"]
    got = ok(harness, token, "memory_get", {"id": memory["id"]})["memory"]
    assert got == memory


def test_memory_write_refuses_bad_input_naming_the_field(harness: Harness) -> None:
    token = harness.token()

    window = failed(
        harness, token, "memory_write", {"content": "x", "valid_from": V2, "valid_to": V1}
    )
    confidence = harness.post(
        tools_call("memory_write", {"content": "x", "confidence": 3}),
        token,
    )

    assert window["field"] == "valid_to"
    assert "confidence" in str(confidence.body)
    assert query_ids(harness, token) == []  # nothing half-written


def test_memory_query_filters_and_pages(harness: Harness) -> None:
    token = harness.token(agent_id="agent-a")
    other = harness.token(agent_id="agent-b")
    a = write(harness, token, "Use Postgres for the ledger.", subject="ledger db", kind="decision")
    b = write(harness, token, "Alice prefers dark mode.", subject="alice ui", kind="preference")
    c = write(harness, other, "Run migrations before deploys.", kind="procedure", tags=["ops"])

    assert query_ids(harness, token, subject="Ledger DB") == [a["id"]]
    assert query_ids(harness, token, kind="preference") == [b["id"]]
    assert query_ids(harness, token, tags=["ops"]) == [c["id"]]
    assert query_ids(harness, token, created_by="agent-b") == [c["id"]]
    assert query_ids(harness, token, query="which database for the ledger")[0] == a["id"]
    first = ok(harness, token, "memory_query", {"limit": 2})
    second = ok(harness, token, "memory_query", {"limit": 2, "cursor": first["next_cursor"]})
    assert [m["id"] for m in first["memories"]] == [c["id"], b["id"]]  # newest first
    assert [m["id"] for m in second["memories"]] == [a["id"]]
    assert second["next_cursor"] is None
    assert failed(harness, token, "memory_query", {"cursor": "bogus"})["field"] == "cursor"


def test_a_retracted_memory_leaves_every_surface_but_keeps_its_history(
    stores: Harness,
) -> None:
    harness = stores
    token = harness.token()
    memory = write(harness, token, "The staging cluster runs on Kubernetes 1.21.", subject="k8s")
    assert ok(harness, token, "get", {"entity_id": memory["id"]})["entity"] is not None
    keyed = ok(harness, token, "memory_put", {"key": "k8s", "content": "Kubernetes 1.21 staging"})
    assert ok(harness, token, "recall", {"query": "kubernetes staging"})["memories"]

    for target in (memory["id"], keyed["memory"]["id"]):
        retracted = ok(harness, token, "memory_retract", {"id": target, "reason": "upgraded"})
        assert retracted["memory"]["status"] == "retracted"

    assert ok(harness, token, "recall", {"query": "kubernetes staging"})["memories"] == []
    assert ok(harness, token, "memory_search", {"query": "kubernetes staging"})["results"] == []
    found = ok(harness, token, "search", {"query": "kubernetes staging", "types": ["memory"]})
    assert found["results"] == []
    assert ok(harness, token, "get", {"entity_id": memory["id"]})["entity"] is None
    assert query_ids(harness, token) == []
    assert ok(harness, token, "memory_get", {"key": "k8s"})["memory"] is None
    kept = ok(harness, token, "memory_get", {"id": memory["id"]})["memory"]
    assert kept["status"] == "retracted"
    assert kept["history"][-1]["note"] == "upgraded"
    assert set(query_ids(harness, token, status=["retracted"])) == {
        memory["id"],
        keyed["memory"]["id"],
    }
    # Retracting twice changes nothing; the key is free for a new memory.
    again = ok(harness, token, "memory_retract", {"id": memory["id"], "reason": "again"})
    assert again["memory"]["history"] == kept["history"]
    assert ok(harness, token, "memory_put", {"key": "k8s", "content": "1.29 now"})["memory"]


def test_supersede_writes_a_linked_version_and_closes_the_old_window(harness: Harness) -> None:
    token = harness.token()
    old = write(
        harness,
        token,
        "The API rate limit is 100 requests a minute.",
        subject="api limit",
        valid_from=V1,
        tags=["api"],
    )

    reply = ok(
        harness,
        token,
        "memory_supersede",
        {
            "id": old["id"],
            "content": "The API rate limit is 600 requests a minute.",
            "valid_from": V2,
        },
    )

    new, closed = reply["memory"], reply["superseded"]
    assert new["supersedes"] == old["id"]
    assert closed["superseded_by"] == new["id"]
    assert closed["status"] == "superseded"
    assert at(closed["valid_to"]) == at(new["valid_from"]) == at(V2)
    assert new["subject"] == "api limit"
    assert new["tags"] == ["api"]
    chain = ok(harness, token, "memory_query", {"versions_of": new["id"]})["memories"]
    assert [m["id"] for m in chain] == [old["id"], new["id"]]
    hits = ok(harness, token, "memory_search", {"query": "API rate limit"})["results"]
    assert [h["id"] for h in hits] == [new["id"]]
    stale = failed(harness, token, "memory_supersede", {"id": old["id"], "content": "x"})
    assert stale["status"] == 409


def test_as_of_and_known_at_over_a_written_superseded_then_retracted_memory(
    stores: Harness,
) -> None:
    harness = stores
    token = harness.token()
    a = write(harness, token, "The office is in Berlin.", subject="office", valid_from=V1)
    b = ok(
        harness,
        token,
        "memory_supersede",
        {"id": a["id"], "content": "The office is in Munich.", "valid_from": V2},
    )["memory"]
    retracted = ok(harness, token, "memory_retract", {"id": b["id"], "reason": "never moved"})
    t1 = a["created_at"]
    t2 = b["created_at"]
    t3 = retracted["memory"]["history"][-1]["at"]
    before_t1 = (at(t1) - timedelta(seconds=1)).isoformat()
    after_t3 = (at(t3) + timedelta(seconds=1)).isoformat()
    before_v1, mid_v, after_v2 = (
        "2025-06-01T00:00:00+00:00",
        "2026-03-01T00:00:00+00:00",
        ("2026-09-01T00:00:00+00:00"),
    )

    def seen(known_at: str | None, as_of: str | None) -> set[str]:
        arguments: dict[str, Any] = {}
        if known_at:
            arguments["known_at"] = known_at
        if as_of:
            arguments["as_of"] = as_of
        return {{a["id"]: "A", b["id"]: "B"}[i] for i in query_ids(harness, token, **arguments)}

    # (known_at, as_of) -> what the team believed was true then.
    expected = {
        (before_t1, mid_v): set(),
        (before_t1, None): set(),
        (between(t1, t2), before_v1): set(),
        (between(t1, t2), mid_v): {"A"},
        (between(t1, t2), after_v2): {"A"},  # A's window was still open
        (between(t1, t2), None): {"A"},
        (between(t2, t3), before_v1): set(),
        (between(t2, t3), mid_v): {"A"},  # superseded, but true for its window
        (between(t2, t3), after_v2): {"B"},
        (between(t2, t3), None): {"B"},
        (after_t3, mid_v): {"A"},
        (after_t3, after_v2): set(),  # B retracted, A's window closed
        (after_t3, None): set(),
        (None, mid_v): {"A"},
        (None, None): set(),
    }
    actual = {cell: seen(*cell) for cell in expected}
    assert actual == expected
    everything = query_ids(harness, token, status=["superseded", "retracted"], known_at=after_t3)
    assert set(everything) == {a["id"], b["id"]}


def test_a_proposal_is_out_of_recall_and_search_until_approved(stores: Harness) -> None:
    harness = stores
    author = harness.token(scopes=("memory",), agent_id="writer")
    reader = harness.token(scopes=("memory", "search"), agent_id="reader")
    reviewer = harness.token(scopes=("memory", "memory.review"), agent_id="lead")
    proposal = ok(
        harness,
        author,
        "memory_propose",
        {"content": "Customer Acme renews in March.", "subject": "acme renewal"},
    )["memory"]
    assert proposal["status"] == "proposed"

    def visible_to_reader() -> bool:
        return bool(
            ok(harness, reader, "recall", {"query": "Acme renewal"})["memories"]
            or ok(harness, reader, "memory_search", {"query": "Acme renewal"})["results"]
            or ok(harness, reader, "search", {"query": "Acme renewal", "types": ["memory"]})[
                "results"
            ]
            or query_ids(harness, reader)
        )

    assert not visible_to_reader()
    assert query_ids(harness, author) == []  # its author sees it only when asking for it
    # Every reader of the team finds it when asking for proposals (the review queue lists
    # them to all), reviewers to decide on it; it is never taken for an active memory.
    for caller in (author, reader, reviewer):
        assert query_ids(harness, caller, status=["proposed"]) == [proposal["id"]]
    read = ok(harness, reader, "memory_get", {"id": proposal["id"]})["memory"]
    assert read["status"] == "proposed"

    decided = ok(
        harness,
        reviewer,
        "memory_review",
        {"ids": [proposal["id"]], "decision": "approve", "note": "confirmed"},
    )
    assert decided["results"] == [
        {"id": proposal["id"], "decided": True, "status": "filed", "message": None}
    ]
    assert visible_to_reader()
    recalled = ok(harness, reader, "recall", {"query": "Acme renewal"})["memories"]
    assert recalled[0]["body"] == "Customer Acme renews in March."
    filed = ok(harness, reader, "memory_get", {"id": proposal["id"]})["memory"]
    assert [(e["action"], e["by"], e.get("note")) for e in filed["history"]] == [
        ("proposed", "writer", None),
        ("approved", "lead", "confirmed"),
    ]


def test_a_rejected_proposal_stays_invisible(harness: Harness) -> None:
    author = harness.token(scopes=("memory",), agent_id="writer")
    reviewer = harness.token(scopes=("memory", "memory.review"))
    proposal = ok(harness, author, "memory_propose", {"content": "The wifi password is hunter2."})[
        "memory"
    ]

    ok(
        harness,
        reviewer,
        "memory_review",
        {"ids": [proposal["id"]], "decision": "reject", "note": "secret"},
    )

    assert ok(harness, author, "recall", {"query": "wifi password"})["memories"] == []
    assert ok(harness, author, "memory_search", {"query": "wifi password"})["results"] == []
    assert query_ids(harness, author) == []
    assert query_ids(harness, author, status=["rejected"]) == [proposal["id"]]
    # Another reader of the team sees neither the rejected record nor its content.
    reader = harness.token(scopes=("memory",), agent_id="reader")
    assert query_ids(harness, reader, status=["rejected", "proposed"]) == []
    assert ok(harness, reader, "memory_get", {"id": proposal["id"]})["memory"] is None
    again = ok(harness, reviewer, "memory_review", {"ids": [proposal["id"]], "decision": "approve"})
    assert again["results"][0]["decided"] is False
    assert again["results"][0]["status"] == "rejected"
    assert ok(harness, author, "recall", {"query": "wifi password"})["memories"] == []


def test_one_review_decides_several_proposals_and_reports_each(harness: Harness) -> None:
    author = harness.token(scopes=("memory",), agent_id="writer")
    reviewer = harness.token(scopes=("memory", "memory.review"), agent_id="lead")
    first, second = (
        ok(harness, author, "memory_propose", {"content": text, "subject": "holidays"})["memory"]
        for text in ("The office closes on 24 December.", "The office closes on 31 December.")
    )

    decided = ok(
        harness,
        reviewer,
        "memory_review",
        {
            "ids": [first["id"], second["id"], "mem_unknown"],
            "decision": "reject",
            "note": "HR has not confirmed",
        },
    )["results"]

    assert [(r["id"], r["decided"], r["status"]) for r in decided] == [
        (first["id"], True, "rejected"),
        (second["id"], True, "rejected"),
        ("mem_unknown", False, None),
    ]
    for proposal in (first, second):
        stored = ok(harness, reviewer, "memory_get", {"id": proposal["id"]})["memory"]
        assert stored["status"] == "rejected"
        assert stored["history"][-1]["note"] == "HR has not confirmed"
    assert query_ids(harness, reviewer, subject="holidays") == []


def test_reviewing_needs_the_memory_review_scope(harness: Harness) -> None:
    author = harness.token(scopes=("memory",))
    proposal = ok(harness, author, "memory_propose", {"content": "Lunch is at noon."})["memory"]

    reply = harness.post(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {
                "name": "memory_review",
                "arguments": {"ids": [proposal["id"]], "decision": "approve"},
            },
        },
        author,
    )

    assert reply.status == 403
    assert reply.body is not None
    assert reply.body["error"]["code"] == -32002
    assert query_ids(harness, author, status=["proposed"]) == [proposal["id"]]
    admin = harness.token(scopes=("admin",))
    approved = ok(harness, admin, "memory_review", {"ids": [proposal["id"]], "decision": "approve"})
    assert approved["results"][0]["decided"] is True


def test_every_tool_is_confined_to_the_token_team(harness: Harness) -> None:
    alpha = harness.token(team="alpha")
    beta = harness.token(team="beta")
    mine = write(harness, alpha, "Deploys are frozen on Fridays.", subject="freeze")
    other = write(harness, alpha, "Deploys are not frozen on Fridays.", subject="freeze")
    dup = write(harness, alpha, "Deploys are frozen on Fridays.", subject="freeze")
    proposal = ok(harness, alpha, "memory_propose", {"content": "Alpha secret plan."})["memory"]
    drain()
    conflicts = ok(harness, alpha, "conflicts_list", {})["items"]
    duplicates = ok(harness, alpha, "duplicates_list", {})["items"]
    assert conflicts
    assert duplicates

    assert query_ids(harness, beta, status=["active", "proposed", "retracted"]) == []
    assert query_ids(harness, beta, query="deploys frozen") == []
    assert failed(harness, beta, "memory_query", {"versions_of": mine["id"]})["status"] == 404
    assert (
        failed(harness, beta, "memory_retract", {"id": mine["id"], "reason": "x"})["status"] == 404
    )
    assert (
        failed(harness, beta, "memory_supersede", {"id": mine["id"], "content": "x"})["status"]
        == 404
    )
    review = ok(harness, beta, "memory_review", {"ids": [proposal["id"]], "decision": "approve"})
    assert review["results"][0] == {
        "id": proposal["id"],
        "decided": False,
        "status": None,
        "message": "no such memory in your team",
    }
    assert ok(harness, beta, "conflicts_list", {"status": "all"})["items"] == []
    assert ok(harness, beta, "duplicates_list", {"status": "all"})["items"] == []
    conflict_id = conflicts[0]["finding"]["id"]
    cluster_id = duplicates[0]["finding"]["id"]
    assert (
        failed(harness, beta, "conflict_resolve", {"id": conflict_id, "action": "both_valid"})[
            "status"
        ]
        == 404
    )
    assert (
        failed(harness, beta, "duplicate_resolve", {"id": cluster_id, "action": "dismiss"})[
            "status"
        ]
        == 404
    )
    assert ok(harness, beta, "memory_get", {"id": other["id"]})["memory"] is None
    theirs = ok(harness, beta, "memory_write", {"content": "Deploys are frozen on Fridays."})
    their_proposal = ok(harness, beta, "memory_propose", {"content": "Beta secret plan."})
    drain()
    # What beta writes or proposes stays beta's: alpha neither sees nor decides it, and beta's
    # identical copy of alpha's memory is no duplicate of it.
    alpha_sees = query_ids(harness, alpha, status=["active", "proposed"], query="deploys frozen")
    assert theirs["memory"]["id"] not in alpha_sees
    assert their_proposal["memory"]["id"] not in query_ids(harness, alpha, status=["proposed"])
    assert (
        ok(
            harness,
            alpha,
            "memory_review",
            {"ids": [their_proposal["memory"]["id"]], "decision": "approve"},
        )["results"][0]["status"]
        is None
    )
    assert ok(harness, alpha, "memory_get", {"id": theirs["memory"]["id"]})["memory"] is None
    assert all(
        theirs["memory"]["id"] not in item["finding"]["members"]
        for item in ok(harness, alpha, "duplicates_list", {"status": "all"})["items"]
    )
    assert ok(harness, beta, "duplicates_list", {"status": "all"})["items"] == []
    # alpha's records are untouched by beta's attempts.
    assert {mine["id"], other["id"], dup["id"]} <= set(query_ids(harness, alpha))
    cursor = ok(harness, alpha, "memory_query", {"limit": 1})["next_cursor"]
    assert failed(harness, beta, "memory_query", {"cursor": cursor})["field"] == "cursor"


def test_a_conflict_is_found_and_resolved_by_keeping_one(harness: Harness) -> None:
    token = harness.token()
    keep = write(harness, token, "Production deploys are frozen on Fridays.", subject="freeze")
    lose = write(harness, token, "Production deploys are not frozen on Fridays.", subject="freeze")
    write(harness, token, "The cafeteria serves lunch at noon.", subject="lunch")
    drain()

    items = ok(harness, token, "conflicts_list", {})["items"]

    assert len(items) == 1
    finding = items[0]["finding"]
    assert sorted(finding["members"]) == sorted([keep["id"], lose["id"]])
    assert "negation" in finding["signals"]
    resolved = ok(
        harness,
        token,
        "conflict_resolve",
        {"id": finding["id"], "action": "keep", "keep_id": keep["id"]},
    )
    assert resolved["finding"]["status"] == "resolved"
    loser = ok(harness, token, "memory_get", {"id": lose["id"]})["memory"]
    assert loser["status"] == "superseded"
    assert loser["superseded_by"] == keep["id"]
    assert ok(harness, token, "conflicts_list", {})["items"] == []
    assert ok(harness, token, "conflicts_list", {"status": "resolved"})["items"]
    again = failed(
        harness, token, "conflict_resolve", {"id": finding["id"], "action": "both_valid"}
    )
    assert again["status"] == 409


def test_a_conflict_is_found_by_subject_or_key_where_the_wording_alone_is_too_far(
    harness: Harness,
) -> None:
    token = harness.token()
    allowed = "Production releases are allowed on Fridays."
    refused = "Nobody ships to prod at the end of the week, never."  # MiniLM cosine 0.43
    # Lexically far apart and about different subjects: not a conflict.
    write(harness, token, allowed, subject="release policy")
    write(harness, token, refused, subject="weekend staffing")
    drain()
    assert ok(harness, token, "conflicts_list", {})["items"] == []

    # The same claims about one subject — named by a memory_write subject on one side and a
    # memory_put key on the other — are.
    by_subject = write(harness, token, allowed, subject="Friday deploys")
    by_key = ok(harness, token, "memory_put", {"key": "friday-deploys", "content": refused})
    drain()

    (item,) = ok(harness, token, "conflicts_list", {})["items"]
    assert sorted(item["finding"]["members"]) == sorted([by_subject["id"], by_key["memory"]["id"]])
    assert item["finding"]["topic"] == "friday deploys"


def test_facts_about_two_different_things_are_not_a_conflict(harness: Harness) -> None:
    token = harness.token()
    # One template filled for two services, and one preference for two people: two facts
    # about two things (issue 11), however alike the sentences.
    write(harness, token, "Service 1 owns port 8001.", subject="ports")
    write(harness, token, "Service 2 owns port 8002.", subject="ports")
    write(harness, token, "The quokka0329830762 service runs on ARM.")
    write(harness, token, "The quokka7741920385 service runs on ARM.")
    write(harness, token, "Prefers dark mode in the editor.", subject="alice")
    write(harness, token, "Prefers light mode in the editor.", subject="bob")
    drain()
    assert ok(harness, token, "conflicts_list", {})["items"] == []
    assert ok(harness, token, "duplicates_list", {})["items"] == []

    # The same service with another port is one thing with two values: a conflict.
    moved = write(harness, token, "Service 1 owns port 8003.", subject="ports")
    drain()
    (item,) = ok(harness, token, "conflicts_list", {})["items"]
    members = {m["id"]: m["content"] for m in item["memories"]}
    assert moved["id"] in members
    assert sorted(members.values()) == ["Service 1 owns port 8001.", "Service 1 owns port 8003."]


def test_a_conflict_merged_into_a_new_version_or_marked_both_valid(harness: Harness) -> None:
    token = harness.token()
    a = write(harness, token, "The on-call rotation changes on Monday.", subject="on-call")
    b = write(harness, token, "The on-call rotation changes on Friday.", subject="on-call")
    c = write(harness, token, "Standups are at 09:30.", subject="standup")
    d = write(harness, token, "Standups are at 10:00.", subject="standup")
    drain()
    by_members = {
        frozenset(i["finding"]["members"]): i["finding"]["id"]
        for i in ok(harness, token, "conflicts_list", {})["items"]
    }

    merged = ok(
        harness,
        token,
        "conflict_resolve",
        {
            "id": by_members[frozenset({a["id"], b["id"]})],
            "action": "merge",
            "content": "The on-call rotation changes on Monday (Friday in holiday weeks).",
        },
    )
    both = ok(
        harness,
        token,
        "conflict_resolve",
        {"id": by_members[frozenset({c["id"], d["id"]})], "action": "both_valid"},
    )

    new = merged["memories"][0]
    assert set(new["merged_from"]) == {a["id"], b["id"]}
    assert merged["finding"]["resolution"]["result_id"] == new["id"]
    assert {m["status"] for m in merged["memories"][1:]} == {"superseded"}
    assert query_ids(harness, token, subject="on-call") == [new["id"]]
    assert both["finding"]["resolution"]["action"] == "both_valid"
    # Detecting the pair again (a replay) does not reopen it.
    assert build_detector().detect("alpha", c["id"]) == []
    assert ok(harness, token, "conflicts_list", {})["items"] == []


def test_duplicates_are_clustered_and_merged_keeping_provenance(harness: Harness) -> None:
    token = harness.token()
    first = write(
        harness,
        token,
        "Backups run nightly at 02:00 UTC.",
        tags=["ops"],
        sources=[{"type": "document", "ref": "runbook-7"}],
    )
    second = write(
        harness,
        token,
        "Backups run nightly at 02:00 UTC.",
        tags=["backup"],
        sources=[{"type": "task", "ref": "task-42"}],
    )
    drain()

    clusters = ok(harness, token, "duplicates_list", {})["items"]

    assert len(clusters) == 1
    cluster = clusters[0]["finding"]
    assert sorted(cluster["members"]) == sorted([first["id"], second["id"]])
    merged = ok(harness, token, "duplicate_resolve", {"id": cluster["id"], "action": "merge"})
    survivor = merged["memories"][0]
    assert survivor["id"] == first["id"]  # the oldest by default
    assert set(survivor["tags"]) == {"ops", "backup"}
    assert {(s["type"], s["ref"]) for s in survivor["sources"]} == {
        ("document", "runbook-7"),
        ("task", "task-42"),
        ("memory", second["id"]),
    }
    assert survivor["merged_from"] == [second["id"]]
    assert query_ids(harness, token) == [first["id"]]
    assert ok(harness, token, "duplicates_list", {})["items"] == []


def test_a_replayed_detection_changes_nothing(harness: Harness) -> None:
    token = harness.token()
    a = write(harness, token, "Builds use Node 18.", subject="node version")
    write(harness, token, "Builds use Node 20.", subject="node version")
    drain()
    before = ok(harness, token, "conflicts_list", {"status": "all"})["items"]

    replay = build_detector().detect("alpha", a["id"])

    assert replay == []
    assert ok(harness, token, "conflicts_list", {"status": "all"})["items"] == before
    # Retracting a member settles the conflict: no longer listed as open, no longer resolvable.
    (finding,) = [item["finding"] for item in before]
    ok(harness, token, "memory_retract", {"id": a["id"], "reason": "Node 18 is gone"})
    assert ok(harness, token, "conflicts_list", {})["items"] == []
    settled = failed(
        harness, token, "conflict_resolve", {"id": finding["id"], "action": "both_valid"}
    )
    assert settled["status"] == 409


def test_engrams_honour_retraction(harness: Harness) -> None:
    token = harness.token()
    engram = ok(
        harness,
        token,
        "engram_create",
        {
            "wallet_address": "0xabc",
            "engram_type": "preference",
            "key": "theme",
            "content": '{"theme": "dark"}',
        },
    )["engram"]

    ok(harness, token, "memory_retract", {"id": engram["id"], "reason": "user changed it"})

    assert (
        ok(harness, token, "engram_get", {"wallet_address": "0xabc", "key": "theme"})["engram"]
        is None
    )
    assert ok(harness, token, "engram_search", {"wallet_address": "0xabc"})["engrams"] == []
    assert (
        failed(harness, token, "memory_supersede", {"id": engram["id"], "content": "{}"})["status"]
        == 409
    )


def test_remembered_memories_are_checked_for_conflicts_once_filed(
    harness: Harness, aws: Settings
) -> None:
    token = harness.token()
    ok(harness, token, "remember", {"title": "Release day", "body": "We release on Tuesdays."})
    ok(
        harness,
        token,
        "remember",
        {"title": "Release day", "body": "We never release on Tuesdays."},
    )
    drain()

    items = ok(harness, token, "conflicts_list", {})["items"]

    assert len(items) == 1
    assert items[0]["finding"]["topic"] == "release day"


def test_keyed_memories_are_checked_for_conflicts_like_the_stream_does(harness: Harness) -> None:
    token = harness.token()
    a = ok(
        harness, token, "memory_put", {"key": "staging-db", "content": "Staging runs Postgres 14."}
    )
    b = ok(
        harness, token, "memory_put", {"key": "staging-pg", "content": "Staging runs Postgres 16."}
    )
    ok(
        harness,
        token,
        "memory_put",
        {"key": "tmp", "content": "Staging runs Postgres 15.", "ttl_days": 1},
    )
    drain()

    items = ok(harness, token, "conflicts_list", {})["items"]

    assert [sorted(i["finding"]["members"]) for i in items] == [
        sorted([a["memory"]["id"], b["memory"]["id"]])
    ]


def test_every_surface_reads_the_newest_version_after_a_supersession(stores: Harness) -> None:
    harness = stores
    token = harness.token()
    old = ok(
        harness,
        token,
        "memory_put",
        {"key": "build-runner", "content": "CI builds run on the Jenkins runner."},
    )["memory"]
    middle = ok(
        harness,
        token,
        "memory_supersede",
        {"id": old["id"], "content": "CI builds run on the Buildkite runner."},
    )["memory"]
    new = ok(
        harness,
        token,
        "memory_supersede",
        {"id": middle["id"], "content": "CI builds run on the GitHub Actions runner."},
    )["memory"]
    drain()

    assert ok(harness, token, "memory_get", {"key": "build-runner"})["memory"]["id"] == new["id"]
    recalled = ok(harness, token, "recall", {"query": "CI builds runner", "include_ids": True})
    assert [m["id"] for m in recalled["memories"]] == [new["id"]]
    searched = ok(harness, token, "memory_search", {"query": "CI builds runner"})["results"]
    assert [h["id"] for h in searched] == [new["id"]]
    found = ok(harness, token, "search", {"query": "CI builds runner", "types": ["memory"]})
    assert [h["entity_id"] for h in found["results"]] == [new["id"]]
    assert query_ids(harness, token) == [new["id"]]
    # Versions of one chain never conflict with each other.
    assert ok(harness, token, "conflicts_list", {"status": "all"})["items"] == []
    # The whole chain, oldest first, from any of its versions.
    for member in (old, middle, new):
        chain = ok(harness, token, "memory_query", {"versions_of": member["id"]})["memories"]
        assert [m["id"] for m in chain] == [old["id"], middle["id"], new["id"]]
        assert [m.get("status", "filed") for m in chain] == ["superseded", "superseded", "filed"]
    assert chain[0]["superseded_by"] == chain[1]["id"]
    assert chain[1]["supersedes"] == old["id"]
    assert chain[0]["valid_to"] == chain[1]["valid_from"]
    assert chain[1]["valid_to"] == chain[2]["valid_from"]


def test_a_near_identical_pair_is_a_duplicate_and_a_cluster_can_be_dismissed(
    harness: Harness,
) -> None:
    token = harness.token()
    a = write(harness, token, "Every pull request needs two approving reviews before merge.")
    b = write(harness, token, "Every pull request needs two approving reviews before merging.")
    drain()

    (cluster,) = ok(harness, token, "duplicates_list", {})["items"]
    assert sorted(cluster["finding"]["members"]) == sorted([a["id"], b["id"]])

    dismissed = ok(
        harness,
        token,
        "duplicate_resolve",
        {"id": cluster["finding"]["id"], "action": "dismiss", "note": "both wordings are used"},
    )

    assert dismissed["finding"]["status"] == "dismissed"
    assert dismissed["finding"]["resolution"]["note"] == "both wordings are used"
    assert set(query_ids(harness, token)) == {a["id"], b["id"]}  # both stay, untouched
    assert ok(harness, token, "duplicates_list", {})["items"] == []
    assert ok(harness, token, "duplicates_list", {"status": "dismissed"})["items"]
    # A replay of detection does not reopen a dismissed cluster.
    assert build_detector().detect("alpha", b["id"]) == []
    assert ok(harness, token, "duplicates_list", {})["items"] == []


EXPECTED_ANNOTATIONS = {
    # tool: (readOnlyHint, destructiveHint, idempotentHint)
    "memory_write": (False, False, False),
    "memory_propose": (False, False, False),
    "memory_query": (True, False, True),
    "memory_retract": (False, True, True),
    "memory_supersede": (False, True, False),
    "memory_review": (False, False, True),
    "conflicts_list": (True, False, True),
    "conflict_resolve": (False, True, False),
    "duplicates_list": (True, False, True),
    "duplicate_resolve": (False, True, False),
}


def test_each_advanced_memory_tool_is_annotated_for_what_it_does(harness: Harness) -> None:
    token = harness.token(scopes=("memory", "memory.review"))
    tools: dict[str, dict[str, Any]] = {}
    cursor: str | None = None
    while True:
        params = {"cursor": cursor} if cursor else {}
        listed = harness.post(
            {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": params}, token
        ).body
        assert listed is not None
        tools.update({t["name"]: t for t in listed["result"]["tools"]})
        cursor = listed["result"].get("nextCursor")
        if not cursor:
            break

    actual = {
        name: (
            tools[name]["annotations"]["readOnlyHint"],
            tools[name]["annotations"]["destructiveHint"],
            tools[name]["annotations"]["idempotentHint"],
        )
        for name in EXPECTED_ANNOTATIONS
    }
    assert actual == EXPECTED_ANNOTATIONS
    assert all(tools[name]["annotations"]["openWorldHint"] is False for name in actual)
