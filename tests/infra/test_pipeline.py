"""The deploy pipeline (.github/workflows/deploy.yml): prod only after a smoke-tested staging,
every action pinned by commit SHA, the tests run in a Debian container as root so the browser and
zsh tests run (and fail, not skip, when they cannot)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from tests.ci import TRUTHY

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github" / "workflows" / "deploy.yml"
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
    assert jobs["deploy"]["needs"] == ["staging", "approval"]
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


def test_the_test_job_runs_ci_run_in_a_debian_container_as_root() -> None:
    """Ubuntu's runner user is not root and its chromium is a snap: the install script would
    install nothing and the browser tests would skip. Debian as root lets it apt-get chromium."""
    workflow = _workflow()
    job = workflow["jobs"]["test"]
    container = job["container"]
    image = container["image"] if isinstance(container, dict) else container
    assert re.fullmatch(r"(python:[\d.]+-(slim-)?bookworm|debian:bookworm(-slim)?)", image), image
    if image.startswith("python:"):  # the image's Python is the pipeline's Python
        assert image.split(":")[1].startswith(workflow["env"]["PYTHON_VERSION"] + "-")
    options = container.get("options", "") if isinstance(container, dict) else ""
    user = re.search(r"--user[ =](\S+)", options)
    assert user is None or user.group(1) in {"root", "0"}
    runs = [step.get("run", "") for step in _steps("test")]
    assert any(run.strip() == ".ci/run" for run in runs)  # the same entry point as local CI
    assert "make test" in (ROOT / ".ci" / "run").read_text()
    # setup-python's builds are for the Ubuntu host, not the container
    assert not [s for s in _steps("test") if "setup-python" in s.get("uses", "")]


def test_the_test_jobs_ci_variable_makes_the_browser_tests_strict() -> None:
    job = _workflow()["jobs"]["test"]
    assert str(job["env"]["CI"]).lower() in TRUTHY
    exported = re.search(r"^export CI=(\S+)$", (ROOT / ".ci" / "run").read_text(), re.M)
    assert exported is not None
    assert exported.group(1).lower() in TRUTHY
    screenshots = next(s for s in _steps("test") if "upload-artifact" in s.get("uses", ""))
    assert screenshots["with"]["path"] == "tests-output/screenshots"
    assert screenshots["with"]["if-no-files-found"] == "error"  # no screenshots = tests did not run


def _make_args(job: str, target: str) -> str:
    """The CDK_EXTRA_ARGS string of the job's `make <target> CAIRN_ENV=prod` step."""
    run = next(s["run"] for s in _steps(job) if f"make {target} CAIRN_ENV=prod" in s.get("run", ""))
    found = re.search(r'CDK_EXTRA_ARGS="([^"]*)"', run)
    assert found is not None, run
    return found.group(1)


def test_every_job_runs_the_functions_python() -> None:
    """The bundles' bytecode is compiled by an interpreter of exactly the runtime's Python
    (infra.bundling.build_python) and uv may not download one: a job on another Python could
    not build what it deploys."""
    from infra.bundling import BUNDLE_RUNTIME, LAMBDA_PYTHON

    workflow = _workflow()
    assert BUNDLE_RUNTIME.name == f"python{LAMBDA_PYTHON}"
    assert workflow["env"]["PYTHON_VERSION"] == LAMBDA_PYTHON
    assert workflow["env"]["UV_PYTHON"] == LAMBDA_PYTHON
    image = workflow["jobs"]["test"]["container"]["image"]
    assert image.startswith(f"python:{LAMBDA_PYTHON}-")
    setups = [
        step
        for job in workflow["jobs"]
        for step in _steps(job)
        if "actions/setup-python" in step.get("uses", "")
    ]
    assert setups
    assert {step["with"]["python-version"] for step in setups} == {"${{ env.PYTHON_VERSION }}"}


def test_ci_synthesizes_prod_with_the_deploy_jobs_region_and_arguments() -> None:
    synth = next(s for s in _steps("synth") if "make synth CAIRN_ENV=prod" in s.get("run", ""))
    deploy = next(s for s in _steps("deploy") if "make deploy CAIRN_ENV=prod" in s.get("run", ""))
    assert _make_args("synth", "synth") == _make_args("deploy", "deploy")
    assert synth["env"]["ALARM_EMAIL"] == deploy["env"]["ALARM_EMAIL"]
    credentials = next(
        s for s in _steps("deploy") if "configure-aws-credentials" in s.get("uses", "")
    )
    region = credentials["with"]["aws-region"]
    assert synth["env"]["AWS_REGION"].replace(" || 'us-east-1'", "") == region


def test_prod_waits_for_an_approval_the_pipeline_checks_exists() -> None:
    """The deploy job waits in the `prod` environment for its required reviewers; the approval
    job fails the run when that environment has none, so prod is never deployed ungated."""
    jobs = _workflow()["jobs"]
    assert jobs["approval"]["needs"] == ["staging"]
    (check,) = _steps("approval")
    assert "environments/prod" in check["run"]
    assert "required_reviewers" in check["run"]
    assert "exit 1" in check["run"]


def test_staging_and_prod_assume_a_role_of_their_own() -> None:
    def role(job: str) -> str:
        step = next(s for s in _steps(job) if "configure-aws-credentials" in s.get("uses", ""))
        assumed: str = step["with"]["role-to-assume"]
        return assumed

    assert "AWS_STAGING_ROLE_ARN" in role("staging")
    assert "AWS_PROD_ROLE_ARN" in role("deploy")
    assert "AWS_PROD_ROLE_ARN" not in role("staging")
    assert "AWS_STAGING_ROLE_ARN" not in role("deploy")


def test_the_smoke_test_goes_through_the_public_front_and_checks_the_origin() -> None:
    smoke = next(s for s in _steps("staging") if "scripts/smoke.py" in s.get("run", ""))
    assert "McpUrl" in smoke["run"]
    assert "OriginUrl" in smoke["run"]
    assert '--origin-url "$origin"' in smoke["run"]


def test_staging_search_is_sized_or_torn_down_at_the_operators_choice() -> None:
    steps = _steps("staging")
    deploy = next(s for s in steps if "make deploy CAIRN_ENV=staging" in s.get("run", ""))
    assert "-c search=$STAGING_SEARCH" in deploy["run"]
    assert "vars.CAIRN_STAGING_SEARCH" in deploy["env"]["STAGING_SEARCH"]
    runs = [s.get("run", "") for s in steps]
    smoke = next(i for i, run in enumerate(runs) if "scripts/smoke.py" in run)
    teardown = next(i for i, s in enumerate(steps) if "make destroy CAIRN_ENV=staging" in runs[i])
    assert smoke < teardown
    assert "CAIRN_STAGING_AFTER_SMOKE == 'destroy'" in steps[teardown]["if"]
    assert steps[teardown]["if"].startswith("success()")
