"""The `cairn capture` subcommands (argument parsing and output; the work is in `capture`)."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path
from typing import Any

# `shared.knowledge.capture` (pydantic models) is imported by the actions that use it, not
# here: `cairn --help` and every other command build this parser too.


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _local_defaults() -> tuple[str | None, str | None]:
    """The running local server's URL and the dev token kept in its data folder."""
    from shared.local.discovery import TargetNotFound, find_local_server
    from shared.local.layout import DEV_TOKEN_FILE, default_data_dir

    try:
        server = find_local_server()
    except TargetNotFound:
        server = None
    token_file = default_data_dir() / DEV_TOKEN_FILE
    token = token_file.read_text().strip() if token_file.exists() else None
    return (f"http://127.0.0.1:{server.port}" if server else None), token


def _install(args: argparse.Namespace) -> int:
    from shared.knowledge import capture

    url, token = args.url, args.token
    if url is None or token is None:
        local_url, local_token = _local_defaults()
        url, token = url or local_url, token or local_token
    if not url or not token:
        _say(
            "error: give --url and --token (an `ingest` token), or start the local server "
            "(`make serve`) so its URL and dev token are used"
        )
        return 2
    saved = capture.save_config(capture.CaptureConfig(url=url, token=token))
    cairn = args.cairn or shutil.which("cairn") or str(Path(sys.argv[0]).resolve())
    for shell in args.shell:
        hook, rc = capture.install(shell, cairn)
        _say(f"{shell}: hook {hook}, sourced from {rc} (open a new shell to start capturing)")
    _say(f"sending to {url} (config {saved}); queued offline in {capture.queue_path()}")
    return 0


def _flush(quiet: bool) -> int:
    from shared.knowledge import capture

    config = capture.load_config()
    if config is None:
        if not quiet:
            _say("error: run `cairn capture install` first (no capture.json)")
        return 2
    queue = capture.Queue(capture.queue_path())
    try:
        sent, left = queue.flush(capture.http_sender(config))
    except capture.SendFailed as exc:
        if not quiet:
            _say(f"offline: {exc}; {queue.size()} event(s) stay queued")
        return 1
    if not quiet:
        print(json.dumps({"sent": sent, "queued": left}))
    return 0


def _record(args: argparse.Namespace) -> int:
    from shared.knowledge import capture

    words = list(args.command)
    if words[:1] == ["--"]:  # argparse keeps the separator in a REMAINDER after options
        words = words[1:]
    command = " ".join(words).strip()
    if not command:
        return 0
    queue = capture.Queue(capture.queue_path())
    at_ms = args.at_ms or None
    event = capture.shell_event(command, args.exit_code, args.duration_ms, args.cwd or ".", at_ms)
    queue.append([event])
    return _flush(quiet=True) if queue.due() else 0


def _send(events: list[dict[str, Any]], what: str) -> int:
    from shared.knowledge import capture

    capture.Queue(capture.queue_path()).append(events)
    _say(f"{len(events)} {what} queued")
    return _flush(quiet=False)


def _import_sessions(args: argparse.Namespace) -> int:
    from shared.knowledge import capture

    default = {
        "claude": Path.home() / ".claude" / "projects",
        "codex": Path.home() / ".codex" / "sessions",
    }[args.harness]
    paths = [Path(p).expanduser() for p in args.paths] or [default]
    files = [f for p in paths for f in ([p] if p.is_file() else sorted(p.rglob("*.jsonl")))]
    read = capture.claude_code_session if args.harness == "claude" else capture.codex_session
    events = [e for f in files if (e := read(f)) is not None]
    return _send(events, f"{args.harness} session(s) of {len(files)} file(s)")


def _import_browser(args: argparse.Namespace) -> int:
    from shared.knowledge import capture

    events = capture.browser_history(Path(args.path).expanduser())
    return _send(events, "browser visit(s)")


def _run(args: argparse.Namespace) -> int:
    action = args.capture_command
    if action == "install":
        return _install(args)
    if action == "record":
        return _record(args)
    if action == "flush":
        return _flush(quiet=False)
    if action in ("import-claude", "import-codex"):
        args.harness = action.removeprefix("import-")
        return _import_sessions(args)
    return _import_browser(args)


def add_parser(commands: Any) -> None:
    """`cairn capture …` on the CLI's subcommands."""
    parser = commands.add_parser(
        "capture", help="capture shell commands, agent sessions and browser history"
    )
    actions = parser.add_subparsers(dest="capture_command", required=True)
    install = actions.add_parser("install", help="install the bash/zsh hook")
    install.add_argument("--shell", nargs="+", choices=("bash", "zsh"), default=["bash", "zsh"])
    install.add_argument("--url", help="the endpoint's base URL (default: the local server)")
    install.add_argument("--token", help="a token with the ingest scope (default: dev token)")
    install.add_argument("--cairn", help="the cairn command the hook runs (default: this one)")
    record = actions.add_parser("record", help="(the hook) queue one command, send when due")
    record.add_argument("--exit-code", type=int, default=0)
    record.add_argument("--duration-ms", type=int, default=0)
    record.add_argument(
        "--at-ms", type=int, default=0, help="when it ended (epoch ms; default: now)"
    )
    record.add_argument("--cwd")
    record.add_argument("command", nargs=argparse.REMAINDER)
    actions.add_parser("flush", help="send the queued events now")
    for harness, where in (("claude", "~/.claude/projects"), ("codex", "~/.codex/sessions")):
        importer = actions.add_parser(
            f"import-{harness}", help=f"import {harness} JSONL sessions (default {where})"
        )
        importer.add_argument("paths", nargs="*")
    browser = actions.add_parser("import-browser", help="import a history export (JSON or CSV)")
    browser.add_argument("path")
    parser.set_defaults(run=_run)
