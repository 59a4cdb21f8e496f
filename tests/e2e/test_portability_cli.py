"""Issue 32's "done when", on a real `cairn serve` and the real CLI: a team holding a memory, a
handoff, a task, an engram, a persona session and a workflow is exported, deleted (every read
of it empty, its old token refused, team `local` untouched), imported back (every one of them
again, found by search too: the index was rebuilt), imported twice with nothing changed, and
backed up to a copy that passes SQLite's integrity check."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.jsonrpc import tools_call
from tests.protocol.conftest import (
    HTTP,
    LocalServer,
    free_port,
    posted_call,
    start_server,
    stop_server,
)

TEAM = "acme"
WALLET = "0xabc"
HANDOFF = (
    "## Start & intent\nx\n\n## Journey\nx\n\n## Current state\nx\n\n## What’s left\nx\n\n"
    "## Open questions\nx\n"
)
STEPS = {"steps": [{"name": "draft"}, {"name": "review", "depends_on": ["draft"]}]}


def _cli(server: LocalServer, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "shared.cli", *args],
        env={**server.env, **env},
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


def _ok(server: LocalServer, token: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = posted_call(server.url, token, tool, arguments)
    assert result.get("isError") is False, (tool, result)
    content: dict[str, Any] = result["structuredContent"]
    return content


def _token(server: LocalServer, team: str) -> str:
    done = _cli(server, "tokens", "create", "--team", team, "--name", "owner", "--scopes", "admin")
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _seed(server: LocalServer, token: str) -> dict[str, str]:
    memory = _ok(server, token, "memory_put", {"key": "pager", "content": "rotation on Mondays"})
    handoff = _ok(server, token, "store_handoff", {"title": "resume", "document_md": HANDOFF})
    task = _ok(server, token, "task.create", {"name": "build"})
    engram = _ok(
        server,
        token,
        "engram_create",
        {"wallet_address": WALLET, "engram_type": "knowledge", "key": "k", "content": "{}"},
    )
    session = _ok(server, token, "hecate_new_session", {"wallet_address": WALLET})
    workflow = _ok(server, token, "workflow.create", {"name": "post", "definition": STEPS})
    return {
        "memory": memory["memory"]["id"],
        "handoff": handoff["handoff"]["id"],
        "task": task["id"],
        "engram": engram["engram"]["id"],
        "session": session["session"]["id"],
        "workflow": workflow["workflow"]["id"],
    }


def _reads(server: LocalServer, token: str, ids: dict[str, str]) -> dict[str, Any]:
    """What every read tool of the team answers about the seeded records (None: absent)."""
    memory = _ok(server, token, "memory_get", {"key": "pager"})["memory"]
    handoffs = _ok(server, token, "list_handoffs", {})["handoffs"]
    task = _ok(server, token, "task.get", {"task_id": ids["task"]})["task"]
    engram = posted_call(server.url, token, "engram_get", {"wallet_address": WALLET, "key": "k"})
    sessions = _ok(server, token, "hecate_list_sessions", {"wallet_address": WALLET})["sessions"]
    workflow = _ok(server, token, "workflow.get", {"workflow_id": ids["workflow"]})["workflow"]
    found = _ok(server, token, "search", {"query": "rotation Mondays"})
    return {
        "memory": memory and memory["content"],
        "handoffs": [h["id"] for h in handoffs],
        "task": task and task["name"],
        "engram": (engram["structuredContent"].get("engram") or {}).get("key"),
        "sessions": [s["id"] for s in sessions],
        "workflow": workflow and workflow["name"],
        "search": "rotation on Mondays" in json.dumps(found),
    }


@pytest.mark.protocol
def test_export_delete_import_and_backup_through_the_running_server(tmp_path: Path) -> None:
    server = start_server(tmp_path / "data", free_port())
    try:
        token = _token(server, TEAM)
        ids = _seed(server, token)
        _ok(server, server.dev_token, "memory_put", {"key": "pager", "content": "local's own"})
        before = _reads(server, token, ids)
        assert before == {
            "memory": "rotation on Mondays",
            "handoffs": [ids["handoff"]],
            "task": "build",
            "engram": "k",
            "sessions": [ids["session"]],
            "workflow": "post",
            "search": True,
        }
        local_before = _ok(server, server.dev_token, "memory_get", {"key": "pager"})

        # A token of another team (or without admin) may not export this one.
        refused = _cli(
            server, "export", "--team", TEAM, "--out", str(tmp_path / "no.jsonl"),
            CAIRN_TOKEN=server.dev_token,
        )  # fmt: skip
        assert refused.returncode == 2
        assert f"may not administer team {TEAM}" in refused.stderr
        assert not (tmp_path / "no.jsonl").exists()

        export_file = tmp_path / "acme.jsonl"
        exported = _cli(server, "export", "--team", TEAM, "--out", str(export_file))
        assert exported.returncode == 0, exported.stderr
        lines = [json.loads(line) for line in export_file.read_text().splitlines()]
        assert lines[0]["format"] == "cairn-team-export"
        assert lines[0]["team"] == TEAM
        assert lines[-1] == {"kind": "end", "records": len(lines) - 2}
        assert secret_free(export_file, token)

        unconfirmed = _cli(server, "team", "delete", TEAM)
        assert unconfirmed.returncode == 2
        assert "--yes" in unconfirmed.stderr
        deleted = _cli(server, "team", "delete", TEAM, "--yes")
        assert deleted.returncode == 0, deleted.stderr
        counts = json.loads(deleted.stdout)["deleted"]
        for kind in ("memories", "handoffs", "tasks", "sessions", "workflows", "token"):
            assert counts.get(kind, 0) >= 1, (kind, counts)

        old = HTTP.post(
            server.url,
            json=tools_call("memory_get", {"key": "pager"}),
            headers={"Authorization": f"Bearer {token}", "Accept": "application/json"},
            timeout=60,
        )
        assert old.status_code == 401  # the team's tokens went with it
        fresh = _token(server, TEAM)
        assert _reads(server, fresh, ids) == {
            "memory": None,
            "handoffs": [],
            "task": None,
            "engram": None,
            "sessions": [],
            "workflow": None,
            "search": False,
        }
        assert _ok(server, server.dev_token, "memory_get", {"key": "pager"}) == local_before

        imported = _cli(server, "import", str(export_file))
        assert imported.returncode == 0, imported.stderr
        report = json.loads(imported.stdout)
        assert report["written"] >= 6
        assert report["read"]["memories"] >= 1
        assert _reads(server, fresh, ids) == before
        again = _cli(server, "import", str(export_file))
        assert again.returncode == 0, again.stderr
        assert json.loads(again.stdout)["written"] == 0  # nothing changed
        assert _reads(server, fresh, ids) == before

        backup_file = tmp_path / "backup" / "cairn.db"
        backed = _cli(server, "backup", str(backup_file))
        assert backed.returncode == 0, backed.stderr
        assert json.loads(backed.stdout)["integrity"] == "ok"
        copy = sqlite3.connect(backup_file)
        try:
            assert copy.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            memories = copy.execute("SELECT id FROM memories WHERE team = ?", (TEAM,)).fetchall()
            assert {ids["memory"], ids["engram"]} == {row[0] for row in memories}
        finally:
            copy.close()
    finally:
        output = stop_server(server)
    assert server.process.returncode == 0, output


def secret_free(path: Path, secret: str) -> bool:
    """No token secret nor hash in the file."""
    text = path.read_text()
    return secret not in text and "secret_hash" not in text


@pytest.mark.bench  # two server starts: slow for `make test`; the copy itself is unit-tested
def test_restore_needs_the_server_stopped_and_puts_the_copy_back(tmp_path: Path) -> None:
    data = tmp_path / "data"
    server = start_server(data, free_port())
    try:
        _ok(server, server.dev_token, "memory_put", {"key": "kept", "content": "in the backup"})
        backup_file = tmp_path / "b.db"
        assert _cli(server, "backup", str(backup_file)).returncode == 0
        _ok(server, server.dev_token, "memory_put", {"key": "later", "content": "after it"})
        while_running = _cli(server, "restore", str(backup_file))
        assert while_running.returncode == 2
        assert "stop that server first" in while_running.stderr
    finally:
        stop_server(server)
    restored = subprocess.run(
        [sys.executable, "-m", "shared.cli", "restore", str(backup_file)],
        env={**os.environ, "CAIRN_DATA_DIR": str(data)},
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert restored.returncode == 0, restored.stderr
    server = start_server(data, free_port())
    try:
        kept = _ok(server, server.dev_token, "memory_get", {"key": "kept"})["memory"]
        later = _ok(server, server.dev_token, "memory_get", {"key": "later"})["memory"]
        assert kept["content"] == "in the backup"
        assert later is None
        found = _ok(server, server.dev_token, "search", {"query": "in the backup"})
        assert "in the backup" in json.dumps(found)  # the index came back with it
    finally:
        stop_server(server)
