"""The HTTP routes: hook batch ingest, and GitHub webhooks from recorded payloads (no network)."""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from shared.knowledge.group import GROUP
from shared.knowledge.http import knowledge_router
from shared.knowledge.tools import function_group
from shared.protocol.doors import DoorRefused, refused
from shared.tools.dispatch import execute
from shared.tools.envelope import Envelope, Reply
from tests.functional.knowledge.conftest import Knowledge
from tests.functional.knowledge.corpus import NOW_MS

FIXTURES = Path(__file__).parent / "fixtures"
SECRET = "s3cret-webhook-key"


@pytest.fixture
def client(knowledge: Knowledge) -> Iterator[TestClient]:
    group = function_group(GROUP)
    group.build_service = lambda: knowledge.service

    def invoke(envelope: Envelope) -> Reply:
        return execute(group, envelope)

    knowledge.service.webhook_secrets = {"alpha": SECRET}.get
    app = FastAPI()
    app.include_router(knowledge_router(knowledge.harness.gateway, invoke, max_body_bytes=200_000))
    app.add_exception_handler(DoorRefused, refused)
    with TestClient(app) as test_client:
        yield test_client


def _events(count: int, prefix: str = "h") -> dict[str, Any]:
    return {
        "events": [
            {
                "id": f"{prefix}{i}",
                "source": "shell",
                "timestamp": NOW_MS - 1000 * (i + 1),
                "command": f"make target{i}",
                "exit_code": 0,
                "cwd": "/src/app",
            }
            for i in range(count)
        ]
    }


def test_a_hook_batch_is_ingested_once_with_the_ingest_scope(
    knowledge: Knowledge, client: TestClient
) -> None:
    token = knowledge.token(scopes=("ingest",))
    headers = {"Authorization": f"Bearer {token}"}
    first = client.post("/ingest/events", json=_events(3), headers=headers)
    again = client.post("/ingest/events", json=_events(3), headers=headers)
    assert first.status_code == 200
    assert first.json() == {"accepted": 3, "duplicates": 0, "redacted": 0}
    assert again.json() == {"accepted": 0, "duplicates": 3, "redacted": 0}
    reader = knowledge.token(scopes=("knowledge",))
    assert len(knowledge.ok(reader, "search_events", {"query": "make target"})) == 3


def test_the_ingest_route_refuses_bad_callers_and_bodies(
    knowledge: Knowledge, client: TestClient
) -> None:
    no_scope = {"Authorization": f"Bearer {knowledge.token(scopes=('knowledge',))}"}
    ingest = {"Authorization": f"Bearer {knowledge.token(scopes=('ingest',))}"}
    assert client.post("/ingest/events", json=_events(1)).status_code == 401
    assert client.post("/ingest/events", json=_events(1), headers=no_scope).status_code == 403
    too_big = client.post("/ingest/events", json=_events(2000), headers=ingest)
    assert too_big.status_code == 413
    bad = client.post("/ingest/events", json={"events": [{"id": "x"}]}, headers=ingest)
    assert bad.status_code == 400
    assert "events" in bad.json()["field"]
    assert knowledge.ok(knowledge.token(), "search_events", {}) == []


def _deliver(
    client: TestClient, name: str, event: str, *, secret: str = SECRET, **replace: Any
) -> httpx.Response:
    payload = json.loads((FIXTURES / name).read_text())
    for key, value in replace.items():
        payload[event][key] = value
    body = json.dumps(payload).encode()
    signature = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return client.post(
        "/hooks/github/alpha",
        content=body,
        headers={"X-GitHub-Event": event, "X-Hub-Signature-256": signature},
    )


def test_a_bad_signature_is_a_401_and_nothing_is_stored(
    knowledge: Knowledge, client: TestClient
) -> None:
    wrong = _deliver(client, "workflow_run_failure.json", "workflow_run", secret="not-it")
    body = (FIXTURES / "workflow_run_failure.json").read_bytes()
    unsigned = client.post(
        "/hooks/github/alpha", content=body, headers={"X-GitHub-Event": "workflow_run"}
    )
    other_team = client.post(
        "/hooks/github/beta",
        content=body,
        headers={
            "X-GitHub-Event": "workflow_run",
            "X-Hub-Signature-256": "sha256="
            + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest(),
        },
    )
    assert (wrong.status_code, unsigned.status_code, other_team.status_code) == (401, 401, 401)
    token = knowledge.token()
    assert knowledge.ok(token, "get_ci_status", {"repo": "acme/billing"}) == {}


def test_recorded_deliveries_give_the_ci_status_with_jobs_and_annotations(
    knowledge: Knowledge, client: TestClient
) -> None:
    assert _deliver(client, "workflow_run_failure.json", "workflow_run").status_code == 200
    job = _deliver(client, "workflow_job_failure.json", "workflow_job")
    assert job.json() == {"stored": True, "run_id": "9120031337", "lessons_counted": 1}
    token = knowledge.token()
    status = knowledge.ok(token, "get_ci_status", {"repo": "acme/billing", "sha": "3f9c2a1"})
    assert status["conclusion"] == "failure"
    assert status["html_url"].endswith("/runs/9120031337")
    assert status["jobs"][0]["name"] == "lint"
    assert status["jobs"][0]["annotations"][0]["rule_id"] == "F401"
    by_branch = knowledge.ok(
        token, "get_ci_status", {"repo": "acme/billing", "branch": "feat/export"}
    )
    assert by_branch["run_id"] == "9120031337"
    assert knowledge.ok(token, "get_ci_status", {"repo": "acme/billing", "branch": "main"}) == {}


def test_a_lesson_graduates_after_failures_in_two_runs(
    knowledge: Knowledge, client: TestClient
) -> None:
    token = knowledge.token()
    _deliver(client, "workflow_job_failure.json", "workflow_job")
    _deliver(client, "workflow_job_failure.json", "workflow_job")  # redelivered: same run
    assert knowledge.ok(token, "get_lessons", {}) == []
    _deliver(client, "workflow_job_failure.json", "workflow_job", run_id=9120099999, id=25019999)
    lessons = knowledge.ok(token, "get_lessons", {"repo": "acme/billing"})
    assert [(x["tool"], x["rule_id"], x["path_prefix"], x["occurrences"]) for x in lessons] == [
        ("ruff", "F401", "src/billing/export/", 2)
    ]
    assert set(lessons[0]) == {
        "id", "repo", "tool", "rule_id", "path_prefix", "summary", "fix_hint", "occurrences",
        "first_seen_at", "last_seen_at",
    }  # fmt: skip
    assert knowledge.ok(token, "get_lessons", {"path": "src/billing/export/csv.py"}) == lessons
    assert knowledge.ok(token, "get_lessons", {"path": "src/other/x.py"}) == []
    assert knowledge.ok(token, "get_lessons", {"tool": "mypy"}) == []
