"""What `cairn serve` acknowledged survives the process being killed outright (SIGKILL: no
shutdown code runs), because every write is committed to the data folder's database before its
tool call is answered."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.protocol.conftest import DEV_TOKEN, HTTP, start_server, stop_server
from tests.protocol.conftest import posted_call as _call

WRITES = 40
HANDOFF = (
    "## Start & intent\nx\n## Journey\nx\n## Current state\nx\n## What’s left\nx\n"
    "## Open questions\nx\n"
)


@pytest.mark.protocol
def test_every_acknowledged_write_survives_sigkill(tmp_path: Path) -> None:
    server = start_server(tmp_path)
    acknowledged: dict[str, list[str]] = {"memories": [], "tasks": [], "handoffs": []}
    try:
        for n in range(WRITES):
            _call(server.url, DEV_TOKEN, "memory_put", {"key": f"k{n}", "content": f"fact {n}"})
            acknowledged["memories"].append(f"k{n}")
            task = _call(server.url, DEV_TOKEN, "task.create", {"name": f"task {n}"})
            acknowledged["tasks"].append(task["structuredContent"]["id"])  # type: ignore[index]
            stored = _call(
                server.url, DEV_TOKEN, "store_handoff", {"title": f"h{n}", "document_md": HANDOFF}
            )
            acknowledged["handoffs"].append(stored["structuredContent"]["handoff"]["id"])  # type: ignore[index]
    finally:
        server.process.send_signal(signal.SIGKILL)
        server.process.wait(timeout=30)

    again = start_server(tmp_path)
    try:
        for key in acknowledged["memories"]:
            found = _call(again.url, DEV_TOKEN, "memory_get", {"key": key})
            assert found["structuredContent"]["memory"] is not None, key  # type: ignore[index]
        for task_id in acknowledged["tasks"]:
            found = _call(again.url, DEV_TOKEN, "task.get", {"task_id": task_id})
            assert found["structuredContent"]["task"]["id"] == task_id  # type: ignore[index]
        listed = _call(again.url, DEV_TOKEN, "list_handoffs", {"limit": 100})
        ids = {h["id"] for h in listed["structuredContent"]["handoffs"]}  # type: ignore[index]
        assert ids == set(acknowledged["handoffs"])
        health = HTTP.get(f"http://127.0.0.1:{again.port}/healthz", timeout=10)
        assert health.status_code == 200
        assert health.json()["status"] == "ok"
        assert health.json()["storage"]["write_failures"] == 0
        schema = health.json()["storage"]["schema"]
        assert {"memories", "tasks", "handoffs", "tokens"} <= set(schema)
    finally:
        stop_server(again)
