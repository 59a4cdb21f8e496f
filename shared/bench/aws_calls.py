"""`cairn bench aws_calls`: DynamoDB round trips per warm tool call on the AWS path.

The gateway and the memory group run in-process on moto's DynamoDB (the tables created from the
CDK's definitions); a botocore `before-call.dynamodb` hook on the session counts every DynamoDB
API call. After a warm-up, `--calls` sequential `ping` and `memory_get` (by key) requests of one
token are made and the calls per request are averaged, by operation name. Run once with the
default token cache and once with `--cache-seconds 0` (a token read per request) to compare.
One JSON object on stdout. Nothing leaves the process: moto answers every AWS call.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import sys
import tempfile
import threading
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

# The operations that read items (the rest write: the rate limiter's slice reservations).
READ_OPERATIONS = frozenset({"GetItem", "BatchGetItem", "Query", "Scan", "TransactGetItems"})


def _count(args: argparse.Namespace) -> dict[str, Any]:
    import boto3
    from moto import mock_aws

    calls: Counter[str] = Counter()

    def hook(model: Any, **_: Any) -> None:
        calls[model.name] += 1

    with mock_aws(), tempfile.TemporaryDirectory() as data:
        # Registered on the default session before any client exists: every client copies it.
        boto3.setup_default_session(region_name="us-east-1")
        session = boto3.DEFAULT_SESSION
        assert session is not None
        session.events.register("before-call.dynamodb", hook)

        from shared import runtime
        from shared.app.groups import load_catalog, load_groups
        from shared.auth.models import TokenRequest
        from shared.auth.wiring import build_token_service
        from shared.config.settings import Settings
        from shared.config.tables import create_tables
        from shared.protocol.gateway import McpGateway
        from shared.tools.invoker import InProcessInvoker

        settings = Settings(
            environment="bench",
            token_pepper=secrets.token_hex(16),
            data_dir=Path(data),
            token_cache_seconds=args.cache_seconds,
        )
        runtime.configure(settings)
        create_tables(session.client("dynamodb"))
        tokens = build_token_service(settings)
        gateway = McpGateway(
            load_catalog(), InProcessInvoker(load_groups(), threading.RLock()), tokens
        )
        secret = tokens.issue(
            TokenRequest(team="bench", name="bench", scopes=("admin",), rate_limit_per_minute=600)
        ).secret
        headers = {
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            "authorization": f"Bearer {secret}",
        }

        def post(method: str, params: dict[str, Any] | None = None) -> None:
            message: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": method}
            if params is not None:
                message["params"] = params
            reply = gateway.handle_post(json.dumps(message).encode(), headers, "http://bench")
            if reply.status != 200 or reply.body is None or "result" not in reply.body:
                raise RuntimeError(f"{method} failed: {reply.status} {reply.body}")

        get = {"name": "memory_get", "arguments": {"key": "bench-key"}}
        put = {"name": "memory_put", "arguments": {"key": "bench-key", "content": "measured"}}
        post("tools/call", put)
        results: dict[str, Any] = {}
        for name, method, params in (
            ("ping", "ping", None),
            ("memory_get", "tools/call", get),
        ):
            post(method, params)  # warm: the token verified, a rate slice reserved
            calls.clear()
            for _ in range(args.calls):
                post(method, params)
            total = sum(calls.values())
            reads = sum(n for op, n in calls.items() if op in READ_OPERATIONS)
            results[name] = {
                "dynamodb_calls_per_request": round(total / args.calls, 3),
                "dynamodb_reads_per_request": round(reads / args.calls, 3),
                "by_operation": {op: round(n / args.calls, 3) for op, n in sorted(calls.items())},
            }
        runtime.configure(Settings())
    return {
        "bench": "aws_calls",
        "calls": args.calls,
        "token_cache_seconds": args.cache_seconds,
        "rate_limit_per_minute": 600,
        **results,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="cairn bench aws_calls", description=__doc__)
    parser.add_argument("--calls", type=int, default=120, help="requests per operation")
    parser.add_argument(
        "--cache-seconds",
        type=float,
        default=60.0,
        help="the gateway's token cache (0: read the token on every request)",
    )
    args = parser.parse_args(argv)
    if args.calls * 2 + 4 > 600:
        parser.error("--calls: at most 298 (the bench token's limit is 600 requests a minute)")
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    # The tool-call log lines go to stdout in Lambda; here stdout carries the figures alone.
    with contextlib.redirect_stdout(sys.stderr):
        figures = _count(args)
    json.dump(figures, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0
