"""The deploy pipeline (.github/workflows/deploy.yml): prod only after a smoke-tested staging,
every action pinned by commit SHA."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

WORKFLOW = Path(__file__).resolve().parents[2] / ".github" / "workflows" / "deploy.yml"
PINNED = re.compile(r"^[\w.-]+/[\w.-]+@[0-9a-f]{40}$")


def _workflow() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(WORKFLOW.read_text())
    return loaded


def _steps(job: str) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = _workflow()["jobs"][job]["steps"]
    return steps


def test_every_action_is_pinned_by_commit_sha() -> None:
    uses = [step["uses"] for job in _workflow()["jobs"] for step in _steps(job) if "uses" in step]
    assert uses
    assert [u for u in uses if not PINNED.match(u)] == []


def test_prod_deploys_only_after_staging_was_deployed_and_smoke_tested() -> None:
    jobs = _workflow()["jobs"]
    assert jobs["staging"]["needs"] == ["test", "synth"]
    assert jobs["deploy"]["needs"] == ["staging"]
    assert jobs["deploy"]["environment"] == "prod"
    runs = [step.get("run", "") for step in _steps("staging")]
    deploy = next(i for i, run in enumerate(runs) if "make deploy CAIRN_ENV=staging" in run)
    smoke = next(i for i, run in enumerate(runs) if "scripts/smoke.py" in run)
    assert deploy < smoke


def test_the_smoke_token_is_masked_and_always_revoked() -> None:
    steps = _steps("staging")
    mint = next(s for s in steps if "tokens" in s.get("run", "") and "create" in s["run"])
    assert "::add-mask::" in mint["run"]
    revoke = next(s for s in steps if "revoke" in s.get("run", ""))
    assert revoke["if"] == "always()"
    assert "--expires-days 1" in mint["run"]  # and it dies by itself if revocation fails
