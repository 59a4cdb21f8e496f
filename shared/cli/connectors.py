"""`cairn connectors add|list|remove`: a team's connectors, which `sync` pulls from.

    cairn connectors add docs --kind git --url https://github.com/acme/handbook --branch main \\
        --glob 'docs/**/*.md' --token-env HANDBOOK_TOKEN --team acme
    cairn connectors add vault --kind obsidian --path ~/Notes --team local
    cairn connectors list --team local
    cairn connectors remove docs --team acme

They go through the running local server (found as `cairn tokens` finds it), whose sync group
checks the name, kind and settings; with --stack (or $CAIRN_STACK_NAME) they write the deployed
stack's sync table with the AWS credentials of the environment, after the same checks. There,
`remove` queues a `remove_connector` run and starts the stack's sync runner on it (the runner
reaches the search index; this machine may not): it removes the connector, its schedule and
its documents, and `sync_status` reports the run (`--keep-documents`: the CLI only forgets the
connector). A token is never given on the command line: `--token-env` names
the environment variable the server reads it from (`--token-secret-arn`, a Secrets Manager
secret, in AWS).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote

from shared.config import names

KINDS = ("git", "obsidian", "folder", "local_files", "s3", "web")


def add_parser(commands: Any) -> None:
    connectors = commands.add_parser(
        "connectors",
        help="a team's connectors (git, obsidian, folder, s3, web) that sync pulls from",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
    )
    connectors.add_argument(
        "--stack", help=f"deployed stack name (default: ${names.Env.STACK_NAME}; unset: local)"
    )
    actions = connectors.add_subparsers(dest="connectors_command", required=True)
    add = actions.add_parser("add", help="register a connector (its name is its search source)")
    add.add_argument("name", help="lowercase letters, digits, - and _; the documents' source")
    add.add_argument("--kind", required=True, choices=KINDS)
    add.add_argument("--team", default=names.LOCAL_TEAM, help="team (default local)")
    add.add_argument("--url", help="git: the repository URL (https://, ssh://, file://)")
    add.add_argument("--branch", help="git: the branch (default main)")
    add.add_argument("--path", help="obsidian/folder: the folder on the server's machine")
    add.add_argument("--bucket", help="s3: the bucket")
    add.add_argument("--prefix", help="s3: the key prefix")
    add.add_argument("--urls", help="web: comma-separated page URLs")
    add.add_argument("--sitemap", help="web: a sitemap URL")
    add.add_argument(
        "--allowed-host", action="append", dest="allowed_hosts", help="web: a host to read"
    )
    add.add_argument(
        "--allow-private",
        action="store_true",
        help="web: read private and loopback addresses (local testing only)",
    )
    add.add_argument(
        "--glob", action="append", dest="globs", help="a path to include (repeat; ** spans folders)"
    )
    add.add_argument("--token-env", help="git: the environment variable holding the token")
    add.add_argument("--token-secret-arn", help="git: a Secrets Manager secret with the token")
    add.add_argument("--max-file-bytes", type=int, help="skip larger files (default 2 MiB)")
    add.add_argument("--max-files", type=int, help="read at most this many files (default 5000)")
    add.add_argument(
        "--replace", action="store_true", help="change an existing connector's settings"
    )
    listing = actions.add_parser("list", help="a team's connectors and their last sync")
    listing.add_argument("--team", default=names.LOCAL_TEAM, help="team (default local)")
    remove = actions.add_parser("remove", help="remove a connector and its documents")
    remove.add_argument("name")
    remove.add_argument("--team", default=names.LOCAL_TEAM, help="team (default local)")
    remove.add_argument(
        "--keep-documents", action="store_true", help="leave its documents in the index"
    )
    connectors.set_defaults(run=run)


def config_of(args: argparse.Namespace) -> dict[str, Any]:
    """The connector's settings from the flags given (the server validates them)."""
    config: dict[str, Any] = {}
    for flag in ("url", "branch", "bucket", "prefix", "sitemap", "token_env", "token_secret_arn"):
        if (value := getattr(args, flag)) is not None:
            config[flag] = value
    if args.path is not None:
        config["path"] = str(Path(args.path).expanduser().resolve())
    if args.urls:
        config["urls"] = [u.strip() for u in args.urls.split(",") if u.strip()]
    if args.allowed_hosts:
        config["allowed_hosts"] = args.allowed_hosts
    if args.allow_private:
        config["allow_private"] = True
    if args.globs:
        config["globs"] = args.globs
    if args.max_file_bytes is not None:
        config["max_file_bytes"] = args.max_file_bytes
    if args.max_files is not None:
        config["max_files"] = args.max_files
    return config


class ConnectorAdminError(Exception):
    """A connectors command failed; the message says why."""


def _server() -> Any:
    from shared.local.discovery import TargetNotFound, running_local_server

    try:
        return running_local_server("connectors live in its data folder")
    except TargetNotFound as exc:
        raise ConnectorAdminError(str(exc)) from exc


class _LocalConnectors:
    """The running local server's `/_local/connectors` API."""

    def __init__(self, server: Any) -> None:
        self._server = server

    def add(self, body: dict[str, Any]) -> Any:
        return self._server.call("POST", "/_local/connectors", body)

    def list(self, team: str) -> Any:
        return self._server.call("GET", f"/_local/connectors?team={quote(team)}")

    def remove(self, team: str, name: str, keep_documents: bool) -> Any:
        keep = "?keep_documents=true" if keep_documents else ""
        return self._server.call("DELETE", f"/_local/connectors/{quote(team)}/{quote(name)}{keep}")


class StackConnectors:
    """A deployed stack's connectors, in its sync table (AWS credentials)."""

    def __init__(self, stack: str, cloudformation: Any = None, lambda_client: Any = None) -> None:
        from shared import runtime
        from shared.config.stack import StackOutputsError, read_stack, stack_settings
        from shared.sync.wiring import build_connector_store

        try:
            outputs = read_stack(stack, (names.Outputs.SYNC_TABLE,), cloudformation)
        except StackOutputsError as exc:
            raise ConnectorAdminError(str(exc)) from exc
        runtime.configure(stack_settings(outputs, {names.TABLE_SYNC: names.Outputs.SYNC_TABLE}))
        self._store = build_connector_store()
        self._runner = outputs.get(names.Outputs.SYNC_RUNNER_ARN)
        self._lambda = lambda_client
        self._schedules = _stack_schedules(outputs)

    def add(self, body: dict[str, Any]) -> Any:
        from datetime import UTC, datetime

        from shared.sync.connectors import register_connector

        record = register_connector(
            self._store,
            body["team"],
            name=body["name"],
            kind=body["kind"],
            config=body["config"],
            replace=body["replace"],
            by="cli",
            now=datetime.now(UTC),
            local=False,
        )
        return record.public()

    def list(self, team: str) -> Any:
        return [record.public() for record in self._store.list(team)]

    def remove(self, team: str, name: str, keep_documents: bool) -> Any:
        if keep_documents:
            if not self._store.remove(team, name):
                raise ConnectorAdminError(f"team {team!r} has no connector {name!r}")
            if self._schedules is not None:  # its schedule goes with it
                self._schedules.delete(team, name)
            return {"team": team, "name": name, "removed": True, "documents_removed": 0}
        if self._store.get(team, name) is None:
            raise ConnectorAdminError(f"team {team!r} has no connector {name!r}")
        if not self._runner:
            raise ConnectorAdminError(
                f"the stack has no {names.Outputs.SYNC_RUNNER_ARN} output to remove the "
                "documents with: redeploy it, or give --keep-documents"
            )
        return self._queue_removal(team, name, self._runner)

    def _queue_removal(self, team: str, name: str, runner: str) -> dict[str, Any]:
        """A `remove_connector` run, started on the stack's sync runner (asynchronously)."""
        from datetime import UTC, datetime

        import boto3

        from shared.sync.runs import LambdaRunLauncher, new_run, start_run
        from shared.sync.wiring import build_sync_state

        client = self._lambda or boto3.client("lambda")
        run = new_run(
            "remove_connector",
            source=name,
            requested_by="cli",
            now=datetime.now(UTC),
            holds_lock=False,
        )
        try:
            start_run(build_sync_state(), lambda: LambdaRunLauncher(client, runner), team, run)
        except Exception as exc:
            raise ConnectorAdminError(
                f"could not start the stack's sync runner ({type(exc).__name__}); nothing "
                "was removed: try again"
            ) from exc
        return {
            "team": team,
            "name": name,
            "removing": True,
            "run_id": run.run_id,
            "documents": "the stack's sync runner removes the connector, its schedule and "
            f"its documents: sync_status with run_id {run.run_id!r} reports it",
        }


def _stack_schedules(outputs: dict[str, str]) -> Any:
    """The stack's sync schedules (EventBridge Scheduler), when its outputs name them."""
    group = outputs.get(names.Outputs.SYNC_SCHEDULE_GROUP)
    runner = outputs.get(names.Outputs.SYNC_RUNNER_ARN)
    role = outputs.get(names.Outputs.SYNC_SCHEDULER_ROLE_ARN)
    if not (group and runner and role):
        return None
    import boto3

    from shared.sync.schedules import ScheduleTarget, SyncSchedules

    return SyncSchedules(boto3.client("scheduler"), ScheduleTarget(group, runner, role))


def run(args: argparse.Namespace) -> int:
    from shared.local.discovery import AdminCallFailed, named_stack
    from shared.tools.errors import ToolError

    try:
        stack = named_stack(args.stack)
        target = StackConnectors(stack) if stack else _LocalConnectors(_server())
        if args.connectors_command == "add":
            body = {
                "team": args.team,
                "name": args.name,
                "kind": args.kind,
                "config": config_of(args),
                "replace": args.replace,
            }
            print(json.dumps(target.add(body)))
        elif args.connectors_command == "list":
            for record in target.list(args.team):
                print(json.dumps(record))
        else:
            print(json.dumps(target.remove(args.team, args.name, args.keep_documents)))
    except (ConnectorAdminError, AdminCallFailed, ToolError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0
