"""Seed 003's contract, tool by tool, where the other knowledge tests check one tool or one
backend: probes hidden from all nine tools, a malformed `since` refused by every tool that takes
one, the text block equal to the seed's value, and CI data kept within its team."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from moto import mock_aws

from tests.functional.knowledge.conftest import Knowledge, _knowledge
from tests.functional.knowledge.corpus import NOW_MS


@pytest.fixture(params=["sqlite", "dynamodb"])
def either(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Knowledge]:
    """A fresh knowledge group on each storage backend."""
    guard = mock_aws() if request.param == "dynamodb" else contextlib.nullcontext()
    with guard:
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
