"""Seed 003 end to end on a real `cairn serve`: commands typed in an interactive bash with the
capture hook installed become findable, and all nine knowledge tools answer the official MCP
SDK client."""

from __future__ import annotations

import hashlib
import hmac
import json
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from tests.protocol.conftest import HTTP, LocalServer, mcp_http_client
from tests.shells import type_into_shell

pytestmark = [
    pytest.mark.protocol,
    pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed"),
]
FIXTURES = Path(__file__).parents[1] / "functional" / "knowledge" / "fixtures"
ROOT = Path(__file__).parents[2]


def _calls(server: LocalServer, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    async def main() -> list[Any]:
        http = mcp_http_client(headers={"Authorization": f"Bearer {server.dev_token}"})
        async with http:
            transport = streamable_http_client(server.url, http_client=http)
            async with Client(transport, mode="auto") as client:
                results = []
                for name, arguments in calls:
                    result = await client.call_tool(name, arguments)
                    assert not result.is_error, (name, result.content)
                    text = result.content[0].text  # type: ignore[union-attr]
                    try:
                        results.append(json.loads(text))
                    except ValueError:
                        results.append(text)
                return results

    return anyio.run(main)


def _type_in_bash(server: LocalServer, home: Path, commands: list[str]) -> dict[str, str]:
    env = {
        **server.env,
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_STATE_HOME": str(home / ".state"),
        "TERM": "dumb",
    }
    wrapper = home / "cairn"
    wrapper.write_text(f'#!/bin/sh\ncd "{ROOT}" && exec "{sys.executable}" -m shared.cli "$@"\n')
    wrapper.chmod(0o755)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "shared.cli",
            "capture",
            "install",
            "--shell",
            "bash",
            "--url",
            f"http://127.0.0.1:{server.port}",
            "--token",
            server.dev_token,
            "--cairn",
            str(wrapper),
        ],
        env=env,
        cwd=ROOT,
        check=True,
        capture_output=True,
        timeout=60,
    )
    work = home / "project"
    work.mkdir()
    typed = f"cd {work}\n" + "\n".join(commands) + "\nexit\n"
    type_into_shell("bash", typed, env=env, cwd=home, timeout=60)
    return env


def _wait_for(check: Any, seconds: float = 120) -> Any:
    deadline = time.monotonic() + seconds
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.5)


def test_hooked_shell_commands_are_found_by_all_nine_tools(
    server: LocalServer, tmp_path: Path
) -> None:
    word = f"zebra{uuid.uuid4().hex[:8]}"
    env = _type_in_bash(
        server,
        tmp_path,
        [f"echo {word} deploy checklist", f"ls /nonexistent-{word}", f"grep -r {word} ."],
    )
    # The hook sends in the background; whatever is still queued goes with a flush.
    queue = Path(env["XDG_STATE_HOME"]) / "cairn" / "capture-queue.jsonl"

    def sent() -> bool:
        subprocess.run(
            [sys.executable, "-m", "shared.cli", "capture", "flush"],
            env=env,
            cwd=ROOT,
            capture_output=True,
            timeout=60,
            check=False,
        )
        return queue.exists() and queue.read_text() == ""

    assert _wait_for(sent, 30)

    def events() -> list[Any]:
        # On a loaded machine a hook still finishing in the background can queue its event
        # after the queue was seen empty: flush again, as the next prompt's hook would.
        sent()
        found: list[Any] = _calls(server, [("search_events", {"query": word})])[0]
        return found if len(found) == 3 else []

    found = _wait_for(events)
    exits = {e["summary"].split()[0]: e["detail"].split()[0] for e in found}
    assert exits == {"echo": "exit=0", "ls": "exit=2", "grep": "exit=1"}  # grep found nothing
    stamps = [e["timestamp"] for e in found]
    assert stamps == sorted(stamps, reverse=True)

    def nodes() -> list[Any]:
        result: list[Any] = _calls(server, [("search_hybrid", {"query": f"{word} deploy"})])[0]
        return result

    hybrid = _wait_for(nodes)
    assert hybrid, "the background enrichment never indexed the session"
    assert word in hybrid[0]["embed_text"]
    assert hybrid[0]["outcome"] == "failure"

    secret = "protocol-test-webhook-secret"
    secrets = server.data_dir / "github-webhook-secrets.json"
    secrets.write_text(json.dumps({"local": secret}))
    body = (FIXTURES / "workflow_job_failure.json").read_bytes()
    delivery = HTTP.post(
        f"http://127.0.0.1:{server.port}/hooks/github/local",
        content=body,
        headers={
            "X-GitHub-Event": "workflow_job",
            "X-Hub-Signature-256": "sha256="
            + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest(),
        },
    )
    assert delivery.status_code == 200, delivery.text

    (
        ask,
        knowledge,
        context,
        entities,
        projects,
        ci,
        lessons,
    ) = _calls(
        server,
        [
            # A question carrying what was typed: "what did I do with <word>?" alone scores
            # under ask's relevance cut (its function words count against the coverage).
            ("ask", {"question": f"what was the {word} deploy checklist?"}),
            ("search_knowledge", {"query": word, "mode": "lexical"}),
            ("get_context", {"query": f"{word} deploy"}),
            ("get_entities", {"type": "tool", "query": "grep"}),
            ("list_projects", {}),
            ("get_ci_status", {"repo": "acme/billing"}),
            ("get_lessons", {}),
        ],
    )
    assert word in ask
    assert "\n\nSources:\n1. [" in ask
    assert knowledge
    assert word in knowledge[0]["embed_text"]
    assert context.startswith(f"# Hippo context for: {word} deploy")
    assert word in context
    assert [e["canonical"] for e in entities] == ["grep"]
    assert str(tmp_path / "project") in {p["cwd_root"] for p in projects}
    assert ci["jobs"][0]["annotations"][0]["rule_id"] == "F401"
    assert lessons == []  # one run so far: a candidate, not a lesson
