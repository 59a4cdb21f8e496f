"""The GitHub connector's pieces without a network: signatures, recorded Actions API responses,
lesson candidates; and the worker's batch and schedule bodies."""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from shared.knowledge.github import lesson_candidates, pull_runs, signature_valid
from shared.knowledge.worker import handle_batch, run_ci_pull

FIXTURES = Path(__file__).parent / "fixtures"


def test_signatures_verify_only_with_the_secret_and_body() -> None:
    body = b'{"action":"completed"}'
    good = "sha256=" + hmac.new(b"k", body, hashlib.sha256).hexdigest()
    assert signature_valid("k", body, good)
    assert not signature_valid("other", body, good)
    assert not signature_valid("k", body + b" ", good)
    assert not signature_valid("k", body, None)
    assert not signature_valid("k", body, good.removeprefix("sha256="))
    assert not signature_valid("", body, good)


def test_the_scheduled_pull_reads_runs_jobs_and_failed_jobs_annotations() -> None:
    recorded = json.loads((FIXTURES / "actions_api.json").read_text())
    asked: list[str] = []

    def fetch(path: str) -> Any:
        asked.append(path)
        return recorded[path]

    (run,) = pull_runs(fetch, "acme/billing")
    assert (run.run_id, run.conclusion, run.branch) == ("9130000001", "failure", "main")
    assert [j.name for j in run.jobs] == ["lint", "test"]
    assert run.jobs[0].annotations[0].rule_id == "F401"
    assert run.jobs[1].annotations == []
    assert "/repos/acme/billing/check-runs/26000002/annotations" not in asked  # passed job
    (candidate,) = list(lesson_candidates(run))
    key = candidate.key
    assert (key.tool, key.rule_id, key.path_prefix) == ("ruff", "F401", "src/billing/export/")
    assert candidate.id == "run:9130000001"
    assert "F401" in candidate.summary


def test_a_failing_message_is_reported_and_the_others_enriched() -> None:
    done: list[tuple[str, list[str]]] = []

    def enrich(team: str, ids: Sequence[str]) -> None:
        if team == "bad":
            raise RuntimeError("boom")
        done.append((team, list(ids)))

    event = {
        "Records": [
            {"messageId": "m1", "body": json.dumps({"team": "a", "event_ids": ["e1", "e2"]})},
            {"messageId": "m2", "body": json.dumps({"team": "bad", "event_ids": ["e3"]})},
            {"messageId": "m3", "body": "not json"},
        ]
    }
    assert handle_batch(event, enrich) == {
        "batchItemFailures": [{"itemIdentifier": "m2"}, {"itemIdentifier": "m3"}]
    }
    assert done == [("a", ["e1", "e2"])]


def test_the_ci_pull_runs_each_repo_and_survives_one_failing() -> None:
    def pull(team: str, repo: str, token: str) -> int:
        if repo == "acme/broken":
            raise OSError("unreachable")
        return len(token)

    targets = {"alpha": ("tok", ["acme/a", "acme/broken"]), "beta": ("tkn2", ["acme/b"])}
    assert run_ci_pull(targets, pull) == {"alpha/acme/a": 3, "beta/acme/b": 4}
