"""A team exported on one backend and imported on the other: every read tool answers the same.

The team is seeded through the real tools (memories with versions and flags, a reviewed
proposal, an engram with a profile field and a pin, a persona session with its model choice, a
claimed handoff, an agent, a task, an artifact with its bytes, a cost, an event, a workflow
with an execution, captured knowledge with its node and entities, the inbox's document and a
sync schedule). Each read tool of the catalog that needs no id is called, and each read of a
seeded id; the answers before and after the move must be equal, with two things normalised:
an artifact's `storage` names where its bytes are on this backend (a folder path locally, an
`s3://` address in AWS), so it differs by design; and scores rounded (`normalised`). Then the
target exports the team again: its records are the source's, column for column (tokens aside:
they are never imported), but for an artifact's `storage`, which the import points at where the
target keeps the bytes.

Moto stands in for DynamoDB, S3 and EventBridge Scheduler. The checks that every table and item
kind has its translation are `test_every_kind_translates`.
"""

from __future__ import annotations

import base64
import contextlib
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from shared import runtime
from shared.app.groups import load_catalog
from shared.app.wiring import build_enricher
from shared.config.settings import Settings
from shared.portability.wiring import build_portability
from tests.functional.conftest import PEPPER, Harness, ok, on_storage
from tests.functional.test_workflow_tools import THREE_STEPS

TEAM = "acme"
WALLET = "0x" + "ab" * 20
HANDOFF = "".join(
    f"## {title}\n{title} text.\n"
    for title in ("Start & intent", "Journey", "Current state", "What’s left", "Open questions")
)
GROUP = "cairn-test-sync"
# What `seed` leaves in the stores (and the artifact's bytes), on either backend.
SEEDED_KINDS = {
    "agent_names",
    "agents",
    "artifact_bytes",
    "artifacts",
    "costs",
    "document_chunks",
    "document_entities",
    "events",
    "handoffs",
    "knowledge_entities",
    "knowledge_events",
    "knowledge_nodes",
    "knowledge_projects",
    "memories",
    "session_messages",
    "session_models",
    "sessions",
    "sync_connectors",
    "sync_schedules",
    "tasks",
    "workflow_executions",
    "workflows",
}
# Reads that answer about the process, not the team's data.
NOT_TEAM_DATA = frozenset({"sync_status"})


@contextlib.contextmanager
def backend(storage: str, data_dir: Path) -> Iterator[Harness]:
    """The gateway in-process on `storage`: SQLite in `data_dir` (local mode), or DynamoDB,
    S3 and Scheduler on moto (with the search index in `data_dir`)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    local = storage == "sqlite"
    settings = Settings(
        environment="local" if local else "test",
        storage=storage,
        data_dir=data_dir,
        token_pepper=PEPPER,
    )
    with on_storage(settings):
        if not local:
            boto3.client("s3", region_name=settings.region).create_bucket(
                Bucket=settings.artifacts_bucket
            )
            boto3.client("scheduler", region_name=settings.region).create_schedule_group(Name=GROUP)
            settings = settings.model_copy(
                update={
                    "sync_schedule_group": GROUP,
                    "sync_runner_arn": "arn:aws:lambda:us-east-1:123456789012:function:runner",
                    "sync_scheduler_role_arn": "arn:aws:iam::123456789012:role/scheduler",
                }
            )
            runtime.configure(settings)
        yield Harness.over(settings)


NO_KNOWLEDGE = "_No relevant knowledge found._"


def seed(h: Harness) -> dict[str, str]:
    """One of every kind of record, through the tools; the ids the reads need."""
    boss = h.token(team=TEAM)

    def call(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return ok(h, boss, tool, arguments)

    ids: dict[str, str] = {}
    ids["memory"] = call("memory_put", {"key": "k1", "content": "deploys run on fridays"})[
        "memory"
    ]["id"]
    call("memory_put", {"key": "k1", "content": "deploys run on mondays", "tags": ["ops"]})
    ids["remembered"] = call("remember", {"title": "lint", "body": "run ruff before commit"})[
        "memory_id"
    ]
    call("flag_memory", {"memory_id": ids["remembered"], "reason": "outdated"})
    ids["fact"] = call("memory_write", {"content": "A calls B over gRPC", "subject": "svc-a"})[
        "memory"
    ]["id"]
    call("memory_supersede", {"id": ids["fact"], "content": "A calls B over HTTP"})
    proposal = call("memory_propose", {"content": "we ship on tuesdays", "subject": "release"})
    call("memory_review", {"ids": [proposal["memory"]["id"]], "decision": "approve"})
    engram = {"wallet_address": WALLET, "engram_type": "preference", "key": "risk"}
    ids["engram"] = call("engram_create", {**engram, "content": '"low"'})["engram"]["id"]
    call("user_profile_update", {"wallet_address": WALLET, "field": "name", "content": '"Ada"'})
    call("hecate_pin_engram", {"id": ids["engram"]})
    said = call(
        "session_append_messages",
        {
            "wallet_address": WALLET,
            "persona": "hecate",
            "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}],
        },
    )
    ids["session"] = said["session"]["id"]
    call(
        "session_pin", {"wallet_address": WALLET, "persona": "hecate", "session_id": ids["session"]}
    )
    call("hecate_set_model", {"query": "claude-opus-4-5", "wallet_address": WALLET})
    ids["handoff"] = call(
        "store_handoff", {"title": "h", "document_md": HANDOFF, "project_key": "p1"}
    )["handoff"]["id"]
    call("claim_handoff", {"handoff_id": ids["handoff"], "claiming_agent_id": "writer"})
    ids["agent"] = call("agent.register", {"name": "writer", "agent_type": "llm"})["agent_id"]
    ids["task"] = call("task.create", {"name": "solo", "priority": 3})["id"]
    body = base64.b64encode(b"\x00artifact bytes").decode()
    ids["artifact"] = call(
        "artifact.put",
        {"task_id": ids["task"], "name": "a.bin", "artifact_type": "file", "content_base64": body},
    )["artifact"]["artifact_id"]
    call(
        "cost.report", {"agent_id": ids["agent"], "model": "m", "provider": "p", "tokens_input": 9}
    )
    call("event.publish", {"event_type": "custom.thing", "payload": {"a": 1}})
    ids["workflow"] = call("workflow.create", {"name": "post", "definition": THREE_STEPS})[
        "workflow"
    ]["id"]
    call("workflow.start", {"workflow_id": ids["workflow"], "inputs": {"topic": "x"}})
    event = {
        "id": "e1",
        "source": "shell",
        "timestamp": 1_700_000_000_000,
        "command": "git commit -m x",
        "exit_code": 0,
        "cwd": "/src/app",
    }
    call("ingest_events", {"events": [event]})
    if runtime.settings().storage == "dynamodb":
        # In AWS the enrichment queue's worker makes the event's node and entities; here the
        # enricher runs in-process, as the local server's does.
        build_enricher().enrich(TEAM, ["e1"])
    else:
        # Locally a background worker enriches it: the reads start once its node is found.
        for _ in range(300):
            if NO_KNOWLEDGE not in call("get_context", {"query": "git"})["context"]:
                break
            time.sleep(0.1)
        else:
            raise AssertionError("the local enricher made no node of the shell event in 30 s")
    call("sync_schedule_set", {"every": "1h"})
    call("inbox_put", {"content": "# notes\nthe cache is warm", "title": "notes"})
    call("sync", {})
    return ids


def by_id_reads(ids: dict[str, str]) -> dict[str, dict[str, Any]]:
    """The reads of seeded ids (and of the seeded wallet, repo and queries)."""
    return {
        "memory_get#id": {"id": ids["memory"]},
        "memory_get#key": {"key": "k1"},
        "memory_search": {"query": "deploys"},
        "engram_get": {"wallet_address": WALLET, "key": "risk"},
        "engram_list_by_type": {"wallet_address": WALLET, "engram_type": "preference"},
        "user_profile_get": {"wallet_address": WALLET},
        "hecate_list_sessions": {"wallet_address": WALLET},
        "task.get": {"task_id": ids["task"]},
        "artifact.get": {"artifact_id": ids["artifact"], "include_content": True},
        "workflow.get": {"workflow_id": ids["workflow"]},
        "workflow.status": {"workflow_id": ids["workflow"]},
        "search": {"query": "cache"},
        "search_knowledge": {"query": "git commit"},
        "get_ci_status": {"repo": "acme/app"},
        "get_context": {"query": "git"},
    }


def answers(h: Harness, ids: dict[str, str]) -> dict[str, Any]:
    """Every read tool's answer for the team (a fresh token of the team asks)."""
    token = h.token(team=TEAM)
    wanted: dict[str, dict[str, Any]] = {
        entry.name: {}
        for entry in load_catalog()
        if entry.read_only
        and entry.name not in NOT_TEAM_DATA
        and not set(entry.descriptor["inputSchema"].get("required", [])) - {"token"}
    }
    wanted.update(by_id_reads(ids))
    found: dict[str, Any] = {}
    for name, arguments in sorted(wanted.items()):
        result = h.call(token, name.split("#")[0], arguments)
        found[name] = normalised(result.get("structuredContent", result))
    return found


def normalised(answer: Any) -> Any:
    """`answer` with an artifact's `storage` (where its bytes are on this backend) left out,
    and relevance scores to 4 places: the index is rebuilt by the import, and a score near 0
    moves in its 6th significant digit with the order the index took its entries in."""
    if isinstance(answer, dict):
        return {
            k: round(v, 4) if k == "score" and isinstance(v, float) else normalised(v)
            for k, v in answer.items()
            if k != "storage"
        }
    if isinstance(answer, list):
        return [normalised(v) for v in answer]
    return answer


def records(path: Path) -> list[dict[str, Any]]:
    """The file's records but tokens (never imported), JSON text columns parsed (their key
    order is each writer's), sorted (the order follows each backend's tables)."""
    found = []
    for text in path.read_text().splitlines()[1:-1]:
        record = json.loads(text)
        if record["kind"] == "token":
            continue
        row = record.get("row", {})
        for column in ("record", "body", "seen_ids"):
            if isinstance(row.get(column), str):
                row[column] = json.loads(row[column])
        if record["kind"] == "sync_schedules":
            row.pop("created_at")  # Scheduler keeps none: an export from it writes its own time
        if record["kind"] == "artifacts":
            row["record"].pop("storage")  # where this backend keeps the bytes: `stored_at`
        found.append(record)
    return sorted(found, key=lambda r: json.dumps(r, sort_keys=True))


def move(source: str, target: str, tmp_path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """Seed on `source`, read, export; import on `target`, read, export again: both reads.
    The second export holds the first's records, column for column."""
    exported, again = tmp_path / f"{source}.jsonl", tmp_path / f"{target}.jsonl"
    with backend(source, tmp_path / source) as h:
        ids = seed(h)
        before = answers(h, ids)
        exported.write_text("".join(build_portability().export(TEAM)))
    with backend(target, tmp_path / target) as h:
        report = build_portability().import_file(exported)
        assert report.written > 0
        assert build_portability().import_file(exported).written == 0  # idempotent
        after = answers(h, ids)
        again.write_text("".join(build_portability().export(TEAM)))
    moved = records(exported)
    assert {record["kind"] for record in moved} >= SEEDED_KINDS
    assert records(again) == moved
    here = "s3://" if target == "dynamodb" else str(tmp_path / target)
    assert stored_at(again)
    assert all(where.startswith(here) for where in stored_at(again))
    return before, after


def stored_at(path: Path) -> list[str]:
    """Where the file's artifact records say their bytes are."""
    found = []
    for text in path.read_text().splitlines()[1:-1]:
        record = json.loads(text)
        if record["kind"] == "artifacts":
            found.append(json.loads(record["row"]["record"])["storage"])
    return found


def assert_same(before: dict[str, Any], after: dict[str, Any]) -> None:
    assert before.keys() == after.keys()
    differing = [name for name in before if before[name] != after[name]]
    assert not differing, {name: (before[name], after[name]) for name in differing}
    # The seeded data is in the answers (not the same because both are empty).
    text = json.dumps(after)
    for seeded in ("deploys run on mondays", "Ada", "claude-opus-4-5", "post", "git commit"):
        assert seeded in text, seeded


@pytest.mark.moto
def test_sqlite_to_dynamodb(tmp_path: Path) -> None:
    assert_same(*move("sqlite", "dynamodb", tmp_path))


@pytest.mark.moto
def test_dynamodb_to_sqlite(tmp_path: Path) -> None:
    assert_same(*move("dynamodb", "sqlite", tmp_path))
