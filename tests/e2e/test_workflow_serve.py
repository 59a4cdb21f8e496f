"""Workflows end to end through `cairn serve` with the official MCP SDK client: all eight
workflow.* tools, a three-step workflow run by two agents (played by the test with task.*),
and a restart of the server in the middle of the execution."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from shared.app.toolsets import TOOLSETS
from tests.protocol.conftest import LocalServer, free_port, sdk_call, start_server, stop_server

pytestmark = pytest.mark.protocol
T = TypeVar("T")

THREE_STEPS = {
    "steps": [
        {"name": "research", "inputs": {"topic": "${inputs.topic}"}},
        {
            "name": "write",
            "depends_on": ["research"],
            "inputs": {"notes": "${steps.research.output}"},
        },
        {"name": "edit", "depends_on": ["write"], "inputs": {"draft": "${steps.write.output}"}},
    ]
}


def _with(server: LocalServer, token: str, work: Callable[[Client], Awaitable[T]]) -> T:
    async def main() -> T:
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        async with (
            http,
            Client(streamable_http_client(server.url, http_client=http)) as client,
        ):
            return await work(client)

    return anyio.run(main)


def _agent_runs(server: LocalServer, token: str, step: str, output: str) -> dict[str, Any]:
    """An agent polls, claims, starts and completes the task of `step`; returns the task."""

    async def work(client: Client) -> dict[str, Any]:
        tasks = (await sdk_call(client, "task.poll", {}))["tasks"]
        (task,) = [t for t in tasks if t["name"] == step]
        await sdk_call(client, "task.claim", {"task_id": task["id"]})
        await sdk_call(client, "task.start", {"task_id": task["id"]})
        await sdk_call(client, "task.complete", {"task_id": task["id"], "output_summary": output})
        return dict(task)

    return _with(server, token, work)


def _status(server: LocalServer, workflow_id: str) -> dict[str, Any]:
    async def work(client: Client) -> dict[str, Any]:
        return dict(
            (await sdk_call(client, "workflow.status", {"workflow_id": workflow_id}))["workflow"]
        )

    return _with(server, server.dev_token, work)


def test_a_three_step_workflow_through_cairn_serve_survives_a_restart(tmp_path: Path) -> None:
    port = free_port()
    server = start_server(tmp_path / "data", port)
    try:
        researcher = server.create_token("local", "task.claim,task.execute", "r", "--agent", "ann")
        writer = server.create_token("local", "task.claim,task.execute", "w", "--agent", "bob")

        async def begin(client: Client) -> dict[str, Any]:
            tools: set[str] = set()
            cursor: str | None = None
            while True:  # tools/list is paged
                page = await client.list_tools(cursor=cursor)
                tools |= {t.name for t in page.tools}
                if not (cursor := page.next_cursor):
                    break
            workflow_tools = TOOLSETS.select("workflows")
            assert workflow_tools is not None
            assert len(workflow_tools) == 8
            assert workflow_tools <= tools
            created = (
                await sdk_call(
                    client, "workflow.create", {"name": "article", "definition": THREE_STEPS}
                )
            )["workflow"]
            await sdk_call(
                client,
                "workflow.start",
                {"workflow_id": created["id"], "inputs": {"topic": "otters"}},
            )
            return dict(created)

        created = _with(server, server.dev_token, begin)
        research = _agent_runs(server, researcher, "research", "otters hold hands")
        assert research["input_data"] == {"topic": "otters"}
        stop_server(server)

        server = start_server(tmp_path / "data", port)  # mid-execution: `write` is waiting

        async def pause_then_resume(client: Client) -> None:
            paused = await sdk_call(client, "workflow.pause", {"workflow_id": created["id"]})
            assert paused["workflow"]["status"] == "paused"
            listed = await sdk_call(client, "workflow.list", {"status": "paused"})
            assert [w["id"] for w in listed["workflows"]] == [created["id"]]
            await sdk_call(client, "workflow.resume", {"workflow_id": created["id"]})

        _with(server, server.dev_token, pause_then_resume)
        write = _agent_runs(server, writer, "write", "a draft about otters")
        assert write["input_data"] == {"notes": "otters hold hands"}
        edit = _agent_runs(server, researcher, "edit", "final")
        assert edit["input_data"] == {"draft": "a draft about otters"}

        done = _status(server, created["id"])
        assert done["status"] == "completed"
        assert [(s["name"], s["agent"]) for s in done["execution"]["steps"]] == [
            ("research", "ann"),
            ("write", "bob"),
            ("edit", "ann"),
        ]

        async def get_then_cancel_another(client: Client) -> None:
            got = await sdk_call(client, "workflow.get", {"workflow_id": created["id"]})
            steps = got["workflow"]["definition"]["steps"]
            assert [(x["name"], x["depends_on"], x["on_failure"]) for x in steps] == [
                ("research", [], "fail"),
                ("write", ["research"], "fail"),
                ("edit", ["write"], "fail"),
            ]
            other = (
                await sdk_call(
                    client, "workflow.create", {"name": "other", "definition": THREE_STEPS}
                )
            )["workflow"]
            await sdk_call(client, "workflow.start", {"workflow_id": other["id"]})
            cancelled = await sdk_call(client, "workflow.cancel", {"workflow_id": other["id"]})
            assert cancelled["workflow"]["status"] == "cancelled"
            assert cancelled["workflow"]["execution"]["steps"][0]["status"] == "cancelled"
            assert (await sdk_call(client, "task.poll", {}))["tasks"] == []

        _with(server, server.dev_token, get_then_cancel_another)
    finally:
        stop_server(server)
