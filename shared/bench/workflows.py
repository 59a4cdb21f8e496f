"""`cairn bench workflows`: the per-step overhead of a workflow through a local server.

Starts a real `cairn serve` (SQLite, the embedded workflow driver) with a throw-away data folder
and runs `--runs` executions of a `--steps`-step linear DAG, the agent played over HTTP with
task.poll / task.claim / task.complete. For every step after the first it measures the time from
sending the previous step's task.complete to the first task.poll that offers the next step's
task (what an agent waiting on the queue sees), and reports p50 / p99 in ms beside the same
agent's task.complete → task.poll round trip on a standalone task (no workflow), so the figure
the workflow adds is the difference. One JSON object on stdout; progress on stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from shared.bench.gateway import _client, _percentile, _Server
from shared.bench.wire import json_headers, tool_call


def run(steps: int = 20, runs: int = 5, progress: bool = True) -> dict[str, Any]:
    """Serve, measure, stop; returns the figures `main` prints."""
    with tempfile.TemporaryDirectory(prefix="cairn-bench-workflows-") as tmp:
        server = _Server(Path(tmp))
        try:
            url = f"http://127.0.0.1:{server.port}/mcp"
            http = _client(json_headers(server.token))

            def tool(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
                response = http.post(url, content=json.dumps(tool_call(name, arguments)))
                response.raise_for_status()
                result: dict[str, Any] = response.json().get("result") or {}
                if result.get("isError") or not result:
                    raise RuntimeError(f"{name} failed: {response.text[:500]}")
                return result

            def offered(name: str) -> dict[str, Any] | None:
                for task in tool("task.poll", {"limit": 50})["tasks"]:
                    if task["name"] == name:
                        return dict(task)
                return None

            def finish(task_id: str) -> None:
                tool("task.claim", {"task_id": task_id})
                tool("task.complete", {"task_id": task_id, "output_summary": "ok"})

            definition = {
                "steps": [
                    {
                        "name": f"s{i:02d}",
                        **({"depends_on": [f"s{i - 1:02d}"]} if i else {}),
                        "inputs": {"previous": f"${{steps.s{i - 1:02d}.output}}"} if i else {},
                    }
                    for i in range(steps)
                ]
            }
            overhead: list[float] = []
            workflow_times: list[float] = []
            for number in range(runs):
                created = tool(
                    "workflow.create", {"name": f"bench-{number}", "definition": definition}
                )["workflow"]
                begun = time.perf_counter()
                tool("workflow.start", {"workflow_id": created["id"]})
                task = offered("s00")
                assert task is not None
                for i in range(1, steps):
                    tool("task.claim", {"task_id": task["id"]})
                    sent = time.perf_counter()
                    tool("task.complete", {"task_id": task["id"], "output_summary": "ok"})
                    following = offered(f"s{i:02d}")
                    while following is None:
                        following = offered(f"s{i:02d}")
                    overhead.append((time.perf_counter() - sent) * 1000)
                    task = following
                finish(task["id"])
                workflow_times.append(time.perf_counter() - begun)
                status = tool("workflow.status", {"workflow_id": created["id"]})["workflow"]
                if status["status"] != "completed":
                    raise RuntimeError(f"run {number} ended {status['status']}")
                if progress:
                    print(f"run {number + 1}/{runs}: {workflow_times[-1]:.2f} s", file=sys.stderr)
            # The same agent loop on standalone tasks: what task.complete + task.poll cost alone.
            baseline: list[float] = []
            for n in range(len(overhead)):
                plain = tool("task.create", {"name": f"plain-{n}"})
                tool("task.claim", {"task_id": plain["id"]})
                sent = time.perf_counter()
                tool("task.complete", {"task_id": plain["id"], "output_summary": "ok"})
                tool("task.poll", {"limit": 50})
                baseline.append((time.perf_counter() - sent) * 1000)
        finally:
            server.stop()
    return {
        "steps": steps,
        "runs": runs,
        "samples": len(overhead),
        "step_to_next_claimable_ms": {
            "p50": round(_percentile(overhead, 0.50), 2),
            "p99": round(_percentile(overhead, 0.99), 2),
        },
        "standalone_complete_then_poll_ms": {
            "p50": round(_percentile(baseline, 0.50), 2),
            "p99": round(_percentile(baseline, 0.99), 2),
        },
        "workflow_seconds_p50": round(_percentile(workflow_times, 0.50), 3),
    }


def main(argv: Sequence[str] | None = None) -> int:
    """CLI: `cairn bench workflows [--steps 20] [--runs 5]`."""
    parser = argparse.ArgumentParser(prog="cairn bench workflows", description=__doc__)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
    if args.steps < 2 or args.runs < 1:
        parser.error("--steps must be at least 2 and --runs at least 1")
    print(json.dumps(run(args.steps, args.runs)))
    return 0
