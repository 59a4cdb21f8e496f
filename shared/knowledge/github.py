"""The GitHub connector: webhook signatures, `workflow_run` / `workflow_job` payloads and Actions
API listings → `CiRun`s, and failure annotations → lesson candidates.

A lesson is keyed by (repo, tool, rule, path prefix); an occurrence is one workflow run, so a
run redelivered or listed twice by the scheduled pull counts once, and a lesson graduates when
two different runs hit the same key.
"""

from __future__ import annotations

import hashlib
import hmac
import posixpath
import re
from collections.abc import Callable, Iterator
from typing import Any

from shared.knowledge.models import CiAnnotation, CiJob, CiRun, LessonKey, LessonOccurrence

SIGNATURE_HEADER = "x-hub-signature-256"
EVENT_HEADER = "x-github-event"
HANDLED_EVENTS = ("workflow_run", "workflow_job")
_RULE = re.compile(
    r"\b(clippy::[a-z_]+|E\d{4}|[A-Z]{1,4}\d{2,4}|TS\d{3,5}|[a-z]+(?:-[a-z]+)+(?=\)|\]|$))"
)
_KNOWN_TOOLS = (
    "ruff", "mypy", "pytest", "eslint", "tsc", "clippy", "rustc", "cargo", "flake8", "pylint",
    "black", "prettier", "golangci-lint", "go", "shellcheck", "hadolint", "jest", "cfn-lint",
)  # fmt: skip


def signature_valid(secret: str, body: bytes, header: str | None) -> bool:
    """`X-Hub-Signature-256` is `sha256=` + HMAC-SHA256(secret, body), compared in constant time."""
    if not secret or not header or not header.startswith("sha256="):
        return False
    expected = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, header)


def _str(value: Any) -> str:
    return "" if value is None else str(value)


def _annotation(raw: dict[str, Any], job_name: str) -> CiAnnotation:
    message = _str(raw.get("message"))
    title = _str(raw.get("title"))
    text = f"{title} {message}"
    lowered = text.lower()
    tool = next((t for t in _KNOWN_TOOLS if re.search(rf"\b{re.escape(t)}\b", lowered)), "")
    rule = _RULE.search(text)
    return CiAnnotation(
        path=_str(raw.get("path")),
        line=raw.get("start_line") if isinstance(raw.get("start_line"), int) else None,
        level=_str(raw.get("annotation_level")) or "failure",
        message=message[:2_000],
        tool=tool or job_name.lower(),
        rule_id=rule.group(1) if rule else "",
    )


def job_from_payload(raw: dict[str, Any]) -> CiJob:
    name = _str(raw.get("name"))
    return CiJob(
        id=_str(raw.get("id")),
        name=name,
        status=_str(raw.get("status")),
        conclusion=raw.get("conclusion"),
        started_at=raw.get("started_at"),
        completed_at=raw.get("completed_at"),
        html_url=raw.get("html_url"),
        annotations=[_annotation(a, name) for a in raw.get("annotations", []) or []],
    )


def _run_identity(repo: str, raw: dict[str, Any], *, run_id: str, workflow: str) -> dict[str, str]:
    """Which run a delivery is about: its repo, run id and workflow (under the keys its event
    names them), commit and branch."""
    return {
        "repo": repo,
        "run_id": _str(raw.get(run_id)),
        "workflow": _str(raw.get(workflow)),
        "sha": _str(raw.get("head_sha")),
        "branch": _str(raw.get("head_branch")),
    }


def run_from_webhook(event: str, payload: dict[str, Any]) -> CiRun | None:
    """The run a `workflow_run` or `workflow_job` delivery describes (None: another event)."""
    repo = _str((payload.get("repository") or {}).get("full_name"))
    if event == "workflow_run" and isinstance(payload.get("workflow_run"), dict):
        run = payload["workflow_run"]
        return CiRun(
            **_run_identity(repo, run, run_id="id", workflow="name"),
            status=_str(run.get("status")),
            conclusion=run.get("conclusion"),
            started_at=run.get("run_started_at") or run.get("created_at"),
            completed_at=run.get("updated_at") if run.get("status") == "completed" else None,
            html_url=run.get("html_url"),
        )
    if event == "workflow_job" and isinstance(payload.get("workflow_job"), dict):
        job = payload["workflow_job"]
        return CiRun(
            **_run_identity(repo, job, run_id="run_id", workflow="workflow_name"),
            status="in_progress" if job.get("status") != "completed" else "",
            # The run's page, not its API URL (`run_url`): the job's page less `/job/<id>`.
            html_url=_run_page(_str(job.get("html_url"))),
            jobs=[job_from_payload(job)],
        )
    return None


def _run_page(job_page: str) -> str | None:
    """`https://github.com/o/r/actions/runs/1` of `…/actions/runs/1/job/2`; None otherwise."""
    match = re.match(r"^(https://[^\s]+/actions/runs/\d+)/job/\d+$", job_page)
    return match.group(1) if match else None


def merge_runs(old: CiRun | None, new: CiRun) -> CiRun:
    """A job delivery updates its job inside the stored run; a run delivery keeps the jobs."""
    if old is None:
        return new
    jobs = {job.id: job for job in old.jobs}
    for job in new.jobs:
        if job.id in jobs and not job.annotations:
            job = job.model_copy(update={"annotations": jobs[job.id].annotations})
        jobs[job.id] = job
    fields = {k: v for k, v in new.model_dump().items() if v not in ("", None, []) and k != "jobs"}
    return old.model_copy(update={**fields, "jobs": list(jobs.values())})


def path_prefix(path: str) -> str:
    """The folder of an annotated file (`src/app/x.py` → `src/app/`); '' for a top-level file."""
    folder = posixpath.dirname(path.strip("/"))
    return f"{folder}/" if folder else ""


def lesson_candidates(run: CiRun) -> Iterator[LessonOccurrence]:
    """An occurrence (seen at the run's `updated_at`) for each failure annotation of a failed
    job."""
    seen: set[str] = set()
    for job in run.jobs:
        if job.conclusion not in ("failure", None) and job.status == "completed":
            continue
        for note in job.annotations:
            if note.level not in ("failure", "error") or not (note.rule_id or note.path):
                continue
            key = LessonKey(
                repo=run.repo,
                tool=note.tool,
                rule_id=note.rule_id,
                path_prefix=path_prefix(note.path),
            )
            if key.key in seen:
                continue
            seen.add(key.key)
            where = key.path_prefix or "the repository root"
            rule = f" {note.rule_id}" if note.rule_id else ""
            summary = f"{note.tool}{rule} fails in {where}: {note.message[:200]}"
            hint = f"Run {note.tool} locally on {where} before pushing" + (
                f"; it reports {note.rule_id}" if note.rule_id else ""
            )
            yield LessonOccurrence(
                key=key,
                id=f"run:{run.run_id}",
                summary=summary,
                fix_hint=hint,
                seen_at=run.updated_at,
            )


# --------------------------------------------------------------------------- scheduled pull

API = "https://api.github.com"
Fetch = Callable[[str], Any]


def api_fetcher(token: str, timeout: float = 15.0) -> Fetch:
    """GET a GitHub REST path with the token; the JSON body."""
    import json
    import urllib.request

    def fetch(path: str) -> Any:
        request = urllib.request.Request(  # noqa: S310 - GitHub's API
            API + path,
            headers={
                "Authorization": f"Bearer {token}",
                "Accept": "application/vnd.github+json",
                "X-GitHub-Api-Version": "2022-11-28",
            },
        )
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
            return json.loads(response.read())

    return fetch


def pull_runs(fetch: Fetch, repo: str, *, per_page: int = 10) -> list[CiRun]:
    """The repo's latest Actions runs with their jobs, and the annotations of failed jobs
    (`GET /repos/{repo}/actions/runs`, `…/runs/{id}/jobs`, `…/check-runs/{job}/annotations`)."""
    listing = fetch(f"/repos/{repo}/actions/runs?per_page={per_page}")
    runs: list[CiRun] = []
    for raw in listing.get("workflow_runs", []):
        run = run_from_webhook(
            "workflow_run", {"workflow_run": raw, "repository": {"full_name": repo}}
        )
        if run is None:
            continue
        jobs = fetch(f"/repos/{repo}/actions/runs/{raw['id']}/jobs").get("jobs", [])
        for job in jobs:
            if job.get("conclusion") == "failure":
                job = {
                    **job,
                    "annotations": fetch(f"/repos/{repo}/check-runs/{job['id']}/annotations"),
                }
            run.jobs.append(job_from_payload(job))
        runs.append(run)
    return runs
