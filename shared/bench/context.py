"""`cairn bench context`: what an agent pays to connect, per MCP URL.

An agent's client sends `initialize` and `tools/list` and puts both answers in the model's
context. For the token `cairn serve` prints (all scopes, the core toolsets at `/mcp`) and for a
`memory,search,get` token, this measures the bytes of those two JSON-RPC answers at `/mcp`, at
each toolset's URL, at each seed-shaped endpoint and at `/mcp/all`, as the server encodes them.
Tokens are estimated as bytes / 4 (a rough rule for English and JSON; a real tokenizer differs
by tens of percent either way).

It runs the local runtime of `cairn serve` in a throw-away data folder and calls its gateway in
process (no socket: the answer bodies are the same bytes).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

HEADERS = {
    "host": "127.0.0.1",
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
}
BASE_URL = "http://127.0.0.1"


def _encoded(body: Any) -> bytes:
    # As the app encodes a reply (shared.protocol.app): compact, UTF-8.
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


def measure(gateway: Any, secret: str, toolset: str | None) -> dict[str, Any]:
    """Bytes of `initialize` and `tools/list` at `/mcp[/toolset]` for `secret`."""
    headers = {**HEADERS, "authorization": f"Bearer {secret}"}
    sizes: dict[str, int] = {}
    tools = 0
    for method, params in (
        ("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {}}),
        ("tools/list", {}),
    ):
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
        reply = gateway.handle_post(body.encode(), headers, BASE_URL, toolset)
        if reply.status != 200 or reply.body is None or "result" not in reply.body:
            raise RuntimeError(f"{method} at {toolset}: {reply.status} {reply.body}")
        sizes[method] = len(_encoded(reply.body))
        if method == "tools/list":
            tools = len(reply.body["result"]["tools"])
    total = sizes["initialize"] + sizes["tools/list"]
    return {
        "url": "/mcp" + (f"/{toolset}" if toolset else ""),
        "tools": tools,
        "initialize_bytes": sizes["initialize"],
        "tools_list_bytes": sizes["tools/list"],
        "total_bytes": total,
        "estimated_tokens": round(total / 4),
    }


def run() -> list[dict[str, Any]]:
    """Rows for the printed token at every URL, and a `memory,search,get` token at two."""
    from shared.app.toolsets import SEED_ENDPOINTS, TOOLSETS
    from shared.auth.models import TokenRequest
    from shared.config import names
    from shared.local.runtime import LocalRuntime

    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="cairn-bench-context-") as tmp:
        local = LocalRuntime(Path(tmp))
        local.start()
        try:
            assert local.app is not None
            gateway = local.app.gateway
            printed = local.provision_dev_token(None).secret
            listed = [toolset.name for toolset in TOOLSETS if toolset.listed]
            for toolset in [None, *listed, *SEED_ENDPOINTS, "all"]:
                rows.append({"token": "printed", **measure(gateway, printed, toolset)})
            narrow, _ = local.issue(
                TokenRequest(
                    team=names.LOCAL_TEAM, name="bench", scopes=("memory", "search", "get")
                )
            )
            for toolset in (None, "all"):
                rows.append({"token": "memory,search,get", **measure(gateway, narrow, toolset)})
        finally:
            local.stop()
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    """The rows as a Markdown table (docs/toolsets.md)."""
    lines = [
        "| token | URL | tools | initialize B | tools/list B | total B | ~tokens (B/4) |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        figures = (
            row["initialize_bytes"],
            row["tools_list_bytes"],
            row["total_bytes"],
            row["estimated_tokens"],
        )
        cells = [row["token"], f"`{row['url']}`", str(row["tools"]), *(f"{n:,}" for n in figures)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="cairn bench context", description=__doc__)
    parser.add_argument("--json", action="store_true", help="one JSON object per row instead")
    args = parser.parse_args(argv)
    rows = run()
    if args.json:
        for row in rows:
            sys.stdout.write(json.dumps(row) + "\n")
    else:
        sys.stdout.write(table(rows) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
