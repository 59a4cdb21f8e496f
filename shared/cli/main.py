"""The `cairn` command: run the local server, manage team tokens, index files, capture work,
benchmark."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from shared.config import names


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _serve(args: argparse.Namespace) -> int:
    from shared.local.server import serve

    return serve(threads=args.threads)


def _mcp(args: argparse.Namespace) -> int:
    from shared.cli.mcp_stdio import run

    return run(args.url, args.toolset)


def _positive_int(raw: str) -> int:
    if not raw.isdigit() or int(raw) < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of at least 1 (got {raw!r})")
    return int(raw)


def _token_request_body(args: argparse.Namespace) -> dict[str, Any]:
    body: dict[str, Any] = {
        "team": args.team,
        "name": args.name,
        "scopes": [s.strip() for s in args.scopes.split(",") if s.strip()],
    }
    if args.agent:
        body["agent_id"] = args.agent
    if args.expires_days is not None:
        body["expires_days"] = args.expires_days
    if args.tools:
        body["allowed_tools"] = [t.strip() for t in args.tools.split(",") if t.strip()]
    if args.context:
        body["context"] = args.context
    if args.rate_limit is not None:
        body["rate_limit_per_minute"] = args.rate_limit
    if args.toolsets:
        body["toolsets"] = _toolsets(args.toolsets)
    return body


def _toolsets(value: str) -> list[str]:
    """`--toolsets a,b`: names the server knows (docs/toolsets.md), else exit naming them."""
    from shared.app.toolsets import TOOLSETS

    chosen = [name.strip() for name in value.split(",") if name.strip()]
    unknown = [name for name in chosen if name not in TOOLSETS.names()]
    if unknown:
        raise SystemExit(
            f"cairn: --toolsets: no toolset {', '.join(unknown)}; "
            f"known: {', '.join(TOOLSETS.names())}"
        )
    return chosen


def _tokens(args: argparse.Namespace) -> int:
    from shared.cli.tokens import TokenAdminError, token_admin

    try:
        admin = token_admin(stack=args.stack)
        if args.tokens_command == "create":
            secret, record = admin.create(_token_request_body(args))
            _stderr(
                f"created token {record['token_id']} ({record['name']}) for team {record['team']} "
                f"with scopes {','.join(record['scopes'])}; the secret below is shown only once"
            )
            print(secret)
        elif args.tokens_command == "list":
            for record in admin.list(args.team):
                print(json.dumps(record))
        elif args.tokens_command == "context":
            _context(admin, args)
        else:
            record = admin.revoke(args.token_id)
            also = record.get("also_revoked", [])
            _stderr(
                f"revoked {record['token_id']} ({record['name']}) of team {record['team']}, "
                f"and {len(also)} token(s) it issued with it"
                + (f": {', '.join(also)}" if also else "")
            )
    except TokenAdminError as exc:
        _stderr(f"error: {exc}")
        return 2
    return 0


def _context(admin: Any, args: argparse.Namespace) -> None:
    """`cairn tokens context list|set|reset`: a team's versions of seed 004's contexts."""
    if args.context_command == "list":
        for view in admin.contexts(args.team):
            print(json.dumps(view))
        return
    if args.context_command == "reset":
        view = admin.reset_context(args.team, args.name)
    else:
        body: dict[str, Any] = {"team": args.team, "name": args.name}
        if args.all:
            body["all_tools"] = True
        else:
            body["tools"] = [t.strip() for t in (args.tools or "").split(",") if t.strip()]
        view = admin.set_context(body)
    print(json.dumps(view))


def _index(args: argparse.Namespace) -> int:
    from shared.local.indexing import IndexingFailed, ProgressDisplay, index_folder

    display = ProgressDisplay()
    try:
        stats = index_folder(args.path, team=args.team, source=args.source, progress=display)
    except IndexingFailed as exc:
        display.close()
        _stderr(f"error: {exc}")
        return 2
    display.close()
    print(json.dumps(stats))
    return 0


# Each benchmark is the module shared.bench.<name> (imported only when run), with its help line.
# The module's `main(argv)` parses its own arguments, so `cairn bench NAME --help` is the module's.
BENCHMARKS: dict[str, str] = {
    "retrieval": "retrieval quality and latency on a BEIR dataset",
    "gateway": "tool-call latency and throughput of a local server over HTTP",
    "aws_calls": "DynamoDB round trips per warm ping and memory_get on the AWS path (moto)",
    "index": "indexing speed (chunks/s) directly and through a running server",
    "embed": "CPU seconds to embed N SciFact texts, beside torch when a torch venv is given",
    "store": "the storage layer under load through a real server (SQLite, moto reference)",
    "curation": "precision and recall of conflict and duplicate detection on labelled pairs",
    "knowledge": "seed 003: ingest events/s, search_hybrid p50 at 10k/100k nodes, recall@10",
    "workflows": "per-step overhead of a 20-step workflow through a local server (p50/p99)",
    "cost": "AWS cost per 1M typical tool calls and idle per month, dev and prod (prices.json)",
    "cold": "each Lambda function's import time as a ratio to import boto3, and its bundle size",
    "context": "bytes and ~tokens of initialize + tools/list per toolset URL (docs/toolsets.md)",
    "portability": "export and import records/s and peak memory of a team of 10k/100k records",
    "connectors": "files/s of a git connector's sync: first, unchanged commit, a tenth edited",
    "soak": "a local server under 30 minutes of mixed load: open files, RSS, errors each minute",
}


def _bench(args: argparse.Namespace) -> int:
    import importlib

    module = importlib.import_module(f"shared.bench.{args.bench_command}")
    result: int = module.main(args.bench_args)
    return result


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="cairn", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="run the local server (SQLite + embedded index)")
    serve.add_argument(
        "--threads",
        type=_positive_int,
        default=None,
        help=(
            f"tool calls using the GIL at once, plus a thread per stuck call "
            f"(default: ${names.Env.THREADS}, else 1)"
        ),
    )
    serve.set_defaults(run=_serve)

    mcp = commands.add_parser(
        "mcp",
        help="MCP over stdio, bridged to a running cairn server (for stdio-only clients)",
        description="Reads MCP's JSON-RPC lines on stdin and answers on stdout, through the "
        "running local server (found like `cairn tokens` finds it) or --url. The token is "
        f"$CAIRN_TOKEN, else locally ${names.Env.DEV_TOKEN} or the data folder's dev token. "
        "It never opens the data folder's stores itself.",
    )
    mcp.add_argument("--url", help="a server's MCP URL, e.g. https://host/mcp ($CAIRN_TOKEN)")
    mcp.add_argument(
        "--toolset",
        help="serve /mcp/<toolset>: core, memory+search, all, hoard, ... (default: /mcp, the "
        "token's default toolsets)",
    )
    mcp.set_defaults(run=_mcp)

    tokens = commands.add_parser(
        "tokens",
        help="manage team tokens",
        description="Manages the tokens of the deployed stack named by --stack or "
        f"${names.Env.STACK_NAME} (AWS credentials), else of the running local server (found by "
        f"the port recorded in its data folder, ${names.Env.PORT}, or {names.DEFAULT_PORT}).",
    )
    tokens.add_argument(
        "--stack",
        help=f"deployed stack name (default: ${names.Env.STACK_NAME}; unset: the local server)",
    )
    token_commands = tokens.add_subparsers(dest="tokens_command", required=True)
    create = token_commands.add_parser("create", help="create a token; prints the secret alone")
    create.add_argument("--team", required=True)
    create.add_argument("--name", required=True)
    create.add_argument("--scopes", required=True, help="comma-separated, e.g. memory,search,get")
    create.add_argument("--agent", help="bind the token to this agent id")
    create.add_argument("--expires-days", type=int, dest="expires_days")
    create.add_argument("--tools", help="comma-separated tool allow-list")
    create.add_argument(
        "--context",
        choices=("agent", "crossroads", "internal"),
        help="a named allow-list (seed 004): agent = the six engram tools, crossroads = none "
        "until the team adds some, internal = all; the team's own version applies",
    )
    create.add_argument("--rate-limit", type=int, dest="rate_limit", help="requests per minute")
    create.add_argument(
        "--toolsets",
        help="comma-separated toolsets `/mcp` serves this token, e.g. core or memory,search "
        "(default: every tool it may call); /mcp/<toolset> and /mcp/all still work",
    )
    listing = token_commands.add_parser("list", help="list a team's tokens (never the secrets)")
    listing.add_argument("--team", required=True)
    revoke = token_commands.add_parser("revoke", help="revoke a token by id")
    revoke.add_argument("token_id")
    context = token_commands.add_parser(
        "context", help="a team's own versions of the allow-list contexts (seed 004)"
    )
    context_commands = context.add_subparsers(dest="context_command", required=True)
    context_list = context_commands.add_parser("list", help="each context's tools for a team")
    context_list.add_argument("--team", required=True)
    context_set = context_commands.add_parser(
        "set", help="change a context's tools for a team (its tokens follow at once)"
    )
    context_set.add_argument("--team", required=True)
    context_set.add_argument("name", choices=("agent", "crossroads", "internal"))
    chosen = context_set.add_mutually_exclusive_group(required=True)
    chosen.add_argument("--tools", help="comma-separated tools ('' for none)")
    chosen.add_argument("--all", action="store_true", help="every tool")
    context_reset = context_commands.add_parser("reset", help="back to the preset")
    context_reset.add_argument("--team", required=True)
    context_reset.add_argument("name", choices=("agent", "crossroads", "internal"))
    tokens.set_defaults(run=_tokens)

    index = commands.add_parser(
        "index",
        help="index a folder of md/txt/json files (incremental; deleted files are tombstoned)",
        description="Indexes into the running local server of the data folder (found like "
        "`cairn tokens` finds it), else into the data folder directly. Progress goes to stderr, "
        "the stats (JSON) to stdout.",
    )
    index.add_argument("path")
    index.add_argument("--source", default="local_files", help="source name (default local_files)")
    index.add_argument("--team", default=names.LOCAL_TEAM, help="team (default local)")
    index.set_defaults(run=_index)

    from shared.cli.capture import add_parser as add_capture

    add_capture(commands)

    from shared.cli.schedules import add_parser as add_sync_schedules

    add_sync_schedules(commands)

    from shared.cli.portability import add_parser as add_portability

    add_portability(commands)
    from shared.cli.connectors import add_parser as add_connectors

    add_connectors(commands)

    bench = commands.add_parser("bench", help="benchmarks")
    bench_commands = bench.add_subparsers(dest="bench_command", required=True)
    for name, help_text in BENCHMARKS.items():
        command = bench_commands.add_parser(name, help=help_text, add_help=False, prefix_chars="\0")
        command.add_argument("bench_args", nargs=argparse.REMAINDER)
    bench.set_defaults(run=_bench)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `cairn` console script."""
    # Before numpy loads: the embedder runs a batch per core itself, and OpenBLAS's own threads
    # on top of that (or alone, on attention's small matmuls) cost up to 6x (`cairn bench index`).
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    args = build_parser().parse_args(argv)
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    result: int = args.run(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
