"""Post-deploy smoke test: a real MCP client against a deployed (or local) cairn.

    uv run python scripts/smoke.py --url https://…/v1/mcp --token cairn_sk_…

With the official MCP Python SDK over Streamable HTTP it runs `ping`, `tools/list` (the core
tools must be there), `memory_put` then `memory_get` of a fresh key, and a handoff round trip
(`store_handoff`, `list_handoffs` finds it, `claim_handoff` wins it, a second claim loses). Every
step prints one line; the exit status is 0 only if all pass. The pipeline runs it against
staging with a token minted for the run (and revoked after), before prod is touched.

With `--origin-url` (the stack's `OriginUrl` output: the execute-api or function URL behind
CloudFront) it also checks the way around the WAF is closed: a call straight to the origin,
with a valid token but without CloudFront's origin header, must be refused with 403.
"""

from __future__ import annotations

import argparse
import secrets
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import anyio
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

CORE_TOOLS = frozenset(
    {"memory_put", "memory_get", "search", "store_handoff", "list_handoffs", "claim_handoff"}
)
HANDOFF = """## Start & intent
Smoke test {run}: prove a deploy can hand work over.

## Journey
Deployed, then connected with the MCP SDK.

## Current state
Waiting for the claim.

## What's left
Claim it.

## Open questions
None.
"""


class SmokeFailure(Exception):
    """A step's answer was not what a working deployment gives."""


def _structured(result: Any, step: str) -> dict[str, Any]:
    if result.is_error:
        raise SmokeFailure(f"{step}: the tool answered with an error: {result.content}")
    content: dict[str, Any] | None = result.structured_content
    if content is None:
        raise SmokeFailure(f"{step}: no structuredContent in the result")
    return content


async def run(url: str, token: str, timeout: float = 30.0) -> list[str]:
    """Every step against `url`; returns the report lines, raises `SmokeFailure` on the first
    failing step."""
    run_id = f"{time.strftime('%Y%m%dT%H%M%S')}-{secrets.token_hex(3)}"
    report: list[str] = []
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    with anyio.fail_after(timeout * 6):  # six steps, none should come near `timeout`
        async with http:
            transport = streamable_http_client(url, http_client=http)
            async with Client(transport) as session:
                await _steps(session, report, run_id)
    return report


async def _steps(session: Client, report: list[str], run_id: str) -> None:
    async def step(name: str, action: Callable[[], Awaitable[str]]) -> None:
        began = time.perf_counter()
        detail = await action()
        report.append(f"ok  {name} ({(time.perf_counter() - began) * 1000:.0f} ms) {detail}")

    async def initialize() -> str:
        return f"protocol {session.protocol_version}"

    async def ping() -> str:
        await session.send_ping()
        return ""

    async def tools() -> str:
        listed = await session.list_tools()
        names = {tool.name for tool in listed.tools}
        missing = CORE_TOOLS - names
        if missing:
            raise SmokeFailure(f"tools/list lacks {sorted(missing)}")
        return f"{len(names)} tools"

    key = f"smoke/{run_id}"

    async def memory_round_trip() -> str:
        _structured(
            await session.call_tool("memory_put", {"key": key, "content": f"smoke {run_id}"}),
            "memory_put",
        )
        got = _structured(await session.call_tool("memory_get", {"key": key}), "memory_get")
        memory = got.get("memory") or {}
        if memory.get("content") != f"smoke {run_id}":
            raise SmokeFailure(f"memory_get returned {memory!r}, not what was put")
        return key

    async def handoff_round_trip() -> str:
        title = f"smoke {run_id}"
        stored = _structured(
            await session.call_tool(
                "store_handoff",
                {"title": title, "document_md": HANDOFF.format(run=run_id), "tags": ["smoke"]},
            ),
            "store_handoff",
        )
        handoff_id = stored["handoff"]["id"]
        listed = _structured(
            await session.call_tool("list_handoffs", {"limit": 50}), "list_handoffs"
        )
        if handoff_id not in {h["id"] for h in listed["handoffs"]}:
            raise SmokeFailure(f"list_handoffs does not show {handoff_id}")
        _structured(
            await session.call_tool("claim_handoff", {"handoff_id": handoff_id}),
            "claim_handoff",
        )
        again = await session.call_tool("claim_handoff", {"handoff_id": handoff_id})
        if not again.is_error:
            raise SmokeFailure(f"a second claim of {handoff_id} was not refused")
        return str(handoff_id)

    await step("initialize", initialize)
    await step("ping", ping)
    await step("tools/list", tools)
    await step("memory_put + memory_get", memory_round_trip)
    await step("handoff store, list, claim, second claim refused", handoff_round_trip)


async def origin_refused(origin_url: str, token: str, timeout: float = 30.0) -> str:
    """The report line of a call straight to the origin (no origin header); raises
    `SmokeFailure` unless it was refused with 403."""
    url = origin_url.rstrip("/")
    if not url.endswith("/mcp"):
        url = f"{url}/mcp"
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    with anyio.fail_after(timeout):
        async with http:
            response = await http.post(
                url,
                json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                headers={"Accept": "application/json, text/event-stream"},
            )
    if response.status_code != 403:
        raise SmokeFailure(
            f"the origin {url} answered {response.status_code} without CloudFront's origin "
            "header: the WAF can be bypassed"
        )
    return f"ok   origin refuses a call without CloudFront's header ({url}: 403)"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True, help="the MCP endpoint (…/mcp)")
    parser.add_argument("--token", required=True, help="a team token with memory and handoff")
    parser.add_argument(
        "--origin-url",
        default="",
        help="the origin behind CloudFront (output OriginUrl): must refuse a direct call",
    )
    args = parser.parse_args(argv)
    try:
        report = anyio.run(run, args.url, args.token)
        if args.origin_url:
            report.append(anyio.run(origin_refused, args.origin_url, args.token))
    except SmokeFailure as failure:
        print(f"FAIL {failure}", file=sys.stderr)
        return 1
    except Exception as exc:  # transport, TLS, auth: the deployment is not usable
        print(f"FAIL {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    print("\n".join(report))
    print("smoke test passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
