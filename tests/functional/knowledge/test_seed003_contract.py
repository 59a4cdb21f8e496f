"""Seed 003's contract, tool by tool, where the other knowledge tests check one tool or one
backend: probes hidden from all nine tools, a malformed `since` refused by every tool that takes
one, the text block equal to the seed's value, and CI data kept within its team."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shared.knowledge.github import run_from_webhook
from tests.functional.knowledge.conftest import Knowledge, _knowledge
from tests.functional.knowledge.corpus import NOW_MS

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(params=["sqlite", "dynamodb"])
def either(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Knowledge]:
    """A fresh knowledge group on each storage backend."""
    yield from _knowledge(tmp_path, request.param)


PROBE_PLACE = "/home/dev/src/zzprobeonly"


def test_probe_events_appear_in_none_of_the_nine_tools(either: Knowledge) -> None:
    # Given a probe event in a place no real event has, beside one real command
    token = either.token()
    real = {
        "id": "real-1",
        "source": "shell",
        "timestamp": NOW_MS - 60_000,
        "command": "make deploy",
        "exit_code": 0,
        "cwd": "/home/dev/src/app",
        "git_repo": "acme/app",
    }
    probe = {
        "id": "probe-1",
        "source": "shell",
        "timestamp": NOW_MS - 1_000,
        "command": "echo zzprobeonly make deploy",
        "exit_code": 0,
        "cwd": PROBE_PLACE,
        "git_repo": "acme/zzprobeonly",
        "git_branch": "main",
        "probe_tag": "synthetic",
    }
    assert either.ingest(token, [real, probe])["accepted"] == 2
    # When every tool is asked about it, then none shows it (nor its place or time)
    shown = {
        "search_events": either.ok(token, "search_events", {"limit": 100}),
        "search_events query": either.ok(token, "search_events", {"query": "zzprobeonly"}),
        "search_hybrid": either.ok(token, "search_hybrid", {"query": "zzprobeonly make deploy"}),
        "search_hybrid recent": either.ok(
            token, "search_hybrid", {"query": "x", "mode": "recent", "limit": 100}
        ),
        "search_knowledge": either.ok(
            token, "search_knowledge", {"query": "zzprobeonly", "mode": "lexical"}
        ),
        "get_context": either.ok(token, "get_context", {"query": "zzprobeonly make deploy"}),
        "ask": either.ok(token, "ask", {"question": "what ran in zzprobeonly?"}),
        "get_entities": either.ok(token, "get_entities", {"limit": 100}),
        "list_projects": either.ok(token, "list_projects", {}),
        "get_ci_status": either.ok(token, "get_ci_status", {"repo": "acme/zzprobeonly"}),
        "get_lessons": either.ok(token, "get_lessons", {"repo": "acme/zzprobeonly"}),
    }
    leaks = {
        tool: value
        for tool, value in shown.items()
        if "zzprobeonly" in json.dumps(value).replace("for: zzprobeonly", "")
        and tool not in ("ask",)
    }
    assert leaks == {}
    # ask repeats the question; its answer and sources must not cite the probe
    assert "zzprobeonly" not in shown["ask"].split("\n", 1)[1].replace("in zzprobeonly?", "")
    assert shown["list_projects"] == [
        {"git_repo": "acme/app", "cwd_root": "/home/dev/src/app", "last_seen": NOW_MS - 60_000}
    ]
    assert [e["id"] for e in shown["search_events"]] == ["real-1"]


# Every tool with a `since`, and the arguments it needs besides.
WITH_SINCE: list[tuple[str, dict[str, Any]]] = [
    ("ask", {"question": "terraform"}),
    ("search_knowledge", {"query": "terraform"}),
    ("search_hybrid", {"query": "terraform"}),
    ("search_events", {}),
    ("get_entities", {}),
    ("get_context", {"query": "terraform"}),
]


@pytest.mark.parametrize(("tool", "arguments"), WITH_SINCE)
@pytest.mark.parametrize("since", ["30 minutes", "30min", "7", "7D", "-1h", "1w"])
def test_every_tool_refuses_a_malformed_since_naming_the_field_and_the_form(
    loaded: tuple[Knowledge, str], tool: str, arguments: dict[str, Any], since: str
) -> None:
    knowledge, corpus = loaded
    result = knowledge.call(corpus, tool, {**arguments, "since": since})
    assert result["isError"] is True
    text = result["content"][0]["text"]
    assert "`since`" in text
    assert "<digits><unit>" in text
    assert repr(since) in text


@pytest.mark.parametrize(("tool", "arguments"), WITH_SINCE)
def test_every_tool_accepts_a_wellformed_since(
    loaded: tuple[Knowledge, str], tool: str, arguments: dict[str, Any]
) -> None:
    knowledge, corpus = loaded
    for since in ("30m", "24h", "7d", ""):
        result = knowledge.call(corpus, tool, {**arguments, "since": since})
        assert result["isError"] is False, (since, result)


# (tool, arguments, the structuredContent field that wraps the seed's value)
NINE: list[tuple[str, dict[str, Any], str]] = [
    ("ask", {"question": "terraform plan"}, "answer"),
    ("search_knowledge", {"query": "terraform"}, "results"),
    ("search_hybrid", {"query": "terraform"}, "results"),
    ("search_events", {"limit": 3}, "events"),
    ("get_entities", {"limit": 3}, "entities"),
    ("list_projects", {}, "projects"),
    ("get_context", {"query": "terraform"}, "context"),
    ("get_ci_status", {"repo": "acme/none"}, "run"),
    ("get_lessons", {}, "lessons"),
]


@pytest.mark.parametrize(("tool", "arguments", "field"), NINE)
def test_the_text_block_is_exactly_the_seed_value_and_structured_content_wraps_it(
    loaded: tuple[Knowledge, str], tool: str, arguments: dict[str, Any], field: str
) -> None:
    knowledge, corpus = loaded
    result = knowledge.call(corpus, tool, arguments)
    assert result["isError"] is False, result
    assert list(result["structuredContent"]) == [field]
    value = result["structuredContent"][field]
    (block,) = result["content"]
    if isinstance(value, str):  # ask, get_context: the Markdown string itself, not JSON
        assert block["text"] == value
    else:
        assert json.loads(block["text"]) == value
    if tool == "get_ci_status":
        assert block["text"] == "{}"  # the seed's empty dict when no run matches


@pytest.mark.parametrize(
    ("tool", "arguments", "cap"),
    [
        ("search_events", {}, 100),
        ("search_hybrid", {"query": "test", "mode": "recent"}, 100),
        ("search_knowledge", {"query": "s", "mode": "lexical"}, 100),
    ],
)
def test_limit_above_the_cap_is_silently_capped(
    loaded: tuple[Knowledge, str], tool: str, arguments: dict[str, Any], cap: int
) -> None:
    knowledge, corpus = loaded
    result = knowledge.call(corpus, tool, {**arguments, "limit": 1_000_000})
    assert result["isError"] is False
    assert len(json.loads(result["content"][0]["text"])) == cap


def test_limit_below_one_is_refused_naming_it(loaded: tuple[Knowledge, str]) -> None:
    knowledge, corpus = loaded
    result = knowledge.call(corpus, "search_events", {"limit": 0})
    assert result["isError"] is True
    assert "limit" in result["content"][0]["text"]


@pytest.mark.parametrize("source", ["shell", "browser", "workflow", "claude"])
def test_source_keeps_only_that_source_in_events_and_nodes(
    loaded: tuple[Knowledge, str], source: str
) -> None:
    knowledge, corpus = loaded
    events = knowledge.ok(corpus, "search_events", {"source": source, "limit": 100})
    assert events
    assert {e["source"] for e in events} == {source}
    nodes = knowledge.ok(
        corpus, "search_hybrid", {"query": "x", "mode": "recent", "source": source, "limit": 100}
    )
    assert nodes
    linked = {
        "shell": "linked_event_ids",
        "workflow": "linked_event_ids",
        "claude": "linked_claude_session_ids",
        "browser": "linked_browser_event_ids",
    }[source]
    assert all(n[linked] for n in nodes)
    event_sources = {
        e["id"]: e["source"]
        for e in knowledge.ok(corpus, "search_events", {"limit": 100, "source": "all"})
    }
    if source in ("shell", "workflow"):
        shown = [i for n in nodes for i in n["linked_event_ids"] if i in event_sources]
        assert {event_sources[i] for i in shown} <= {source}


def test_branch_is_exact_and_ignored_for_browser_events(loaded: tuple[Knowledge, str]) -> None:
    knowledge, corpus = loaded
    everything = knowledge.ok(corpus, "search_events", {"limit": 100})
    browser = [e for e in everything if e["source"] == "browser"]
    on_main = knowledge.ok(corpus, "search_events", {"branch": "main", "limit": 100})
    assert {e["git_branch"] for e in on_main if e["source"] != "browser"} == {"main"}
    # Browser visits have no branch: the filter does not apply to them, as in seed 003.
    assert {e["id"] for e in browser} <= {e["id"] for e in on_main}
    assert knowledge.ok(corpus, "search_events", {"branch": "mai", "source": "shell"}) == []


def test_a_teams_ci_runs_and_lessons_stay_in_that_team(knowledge: Knowledge) -> None:
    # Given a failed run recorded for team alpha, twice (a graduated lesson)
    payload = json.loads((FIXTURES / "workflow_job_failure.json").read_text())
    runs = []
    for run_id in (1, 2):
        payload["workflow_job"]["run_id"] = run_id
        found = run_from_webhook("workflow_job", payload)
        assert found is not None
        runs.append(found)
        knowledge.service.record_ci_run("alpha", found)
    run = runs[-1]
    alpha, beta = knowledge.token("alpha"), knowledge.token("beta")
    assert knowledge.ok(alpha, "get_ci_status", {"repo": "acme/billing"}) != {}
    assert len(knowledge.ok(alpha, "get_lessons", {})) == 1
    # Then team beta sees neither, by repo, sha, branch or lesson filters
    repo = {"repo": "acme/billing"}
    assert knowledge.ok(beta, "get_ci_status", repo) == {}
    assert knowledge.ok(beta, "get_ci_status", {**repo, "branch": run.branch}) == {}
    assert knowledge.ok(beta, "get_ci_status", {**repo, "sha": run.sha}) == {}
    assert knowledge.ok(beta, "get_lessons", repo) == []
    assert knowledge.ok(beta, "get_lessons", {"path": "src/billing/export/csv.py"}) == []


def test_ask_in_another_team_cites_nothing_of_this_one(knowledge: Knowledge) -> None:
    alpha, beta = knowledge.token("alpha"), knowledge.token("beta")
    event = {
        "id": "a1",
        "source": "shell",
        "timestamp": NOW_MS - 1_000,
        "command": "terraform apply -target=module.zzalphaonly",
        "exit_code": 0,
        "cwd": "/home/dev/src/infra",
    }
    knowledge.ingest(alpha, [event])
    assert "zzalphaonly" in knowledge.ok(alpha, "ask", {"question": "terraform apply"})
    answer = knowledge.ok(beta, "ask", {"question": "terraform apply zzalphaonly"})
    assert "zzalphaonly" not in answer.replace("for: terraform apply zzalphaonly", "")
    assert answer.endswith("Sources:\n(none)\n")


def test_an_extractive_answer_quotes_no_sentence_twice(knowledge: Knowledge) -> None:
    token = knowledge.token()
    commands = ["cd /src/payments", "make refund-ledger", "pytest tests/test_refunds.py -q"]
    events = [
        {
            "id": f"r{i}",
            "source": "shell",
            "timestamp": NOW_MS - 60_000 + i * 1_000,
            "command": command,
            "exit_code": 1 if i == 2 else 0,
            "cwd": "/src/payments",
        }
        for i, command in enumerate(commands)
    ]
    knowledge.ingest(token, events)
    answer = knowledge.ok(token, "ask", {"question": "what failed in the refund ledger?"})
    body = answer.split("\n\nSources:\n", 1)[0]
    quoted = [line[2:].rsplit(" [", 1)[0] for line in body.splitlines() if line.startswith("- ")]
    assert quoted, answer
    repeated = [(a, b) for a in quoted for b in quoted if a is not b and a in b]
    assert repeated == []


def test_search_events_names_all_among_its_sources_and_an_unknown_exit_code(
    knowledge: Knowledge,
) -> None:
    token = knowledge.token()
    bad = knowledge.call(token, "search_events", {"source": "irc"})
    assert bad["isError"] is True
    assert "'all'" in bad["content"][0]["text"]
    event = {"id": "n1", "source": "shell", "timestamp": NOW_MS - 5, "command": "make"}
    knowledge.ingest(token, [event])
    (shown,) = knowledge.ok(token, "search_events", {"source": "all"})
    assert shown["detail"] == "exit=unknown duration=0ms"


def test_a_job_delivery_alone_gives_the_runs_page_not_its_api_url(knowledge: Knowledge) -> None:
    payload = json.loads((FIXTURES / "workflow_job_failure.json").read_text())
    run = run_from_webhook("workflow_job", payload)
    assert run is not None
    knowledge.service.record_ci_run("alpha", run)
    status = knowledge.ok(knowledge.token(), "get_ci_status", {"repo": "acme/billing"})
    assert status["html_url"] == f"https://github.com/acme/billing/actions/runs/{run.run_id}"
