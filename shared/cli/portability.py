"""`cairn export`, `cairn import`, `cairn team delete`, `cairn backup`, `cairn restore`
(docs/portability.md).

    cairn export --team acme --out acme.jsonl
    cairn import acme.jsonl [--team acme-copy]
    cairn team delete acme --yes
    cairn backup ~/cairn-backup.db
    cairn restore ~/cairn-backup.db          (with the server stopped)

The first four go through the running local server of the data folder (found like `cairn
tokens` finds it), which holds the database; `restore` replaces the database, so it runs only
while no server holds the folder. With `$CAIRN_TOKEN` set, the server holds the command to that
token: its own team only, and only with the `admin` scope.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.error
import urllib.request
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from shared.config import names

if TYPE_CHECKING:
    from shared.local.discovery import LocalServer
    from shared.portability.service import Portability

TOKEN_ENV = "CAIRN_TOKEN"
STACK_HELP = (
    f"a deployed stack (default: ${names.Env.STACK_NAME}; unset: the local server), run here "
    "with the environment's AWS credentials"
)


class CommandFailed(Exception):
    """The command failed; the message says why and what to do."""


def _outputs(stack: str, cloudformation: Any) -> dict[str, str]:
    from shared.config.stack import StackOutputsError, read_stack

    try:
        return read_stack(stack, tuple(names.TABLE_OUTPUTS.values()), cloudformation)
    except StackOutputsError as exc:
        raise CommandFailed(str(exc)) from exc


def _settings_of(outputs: dict[str, str]) -> Any:
    """Settings of a deployed stack from its outputs (every table, the bucket, the search
    endpoint, the schedule groups), for running these commands here on its stores with the
    environment's AWS credentials."""
    from shared.config.settings import Settings
    from shared.config.stack import stack_settings

    return stack_settings(
        outputs,
        names.TABLE_OUTPUTS,
        data_dir=None,
        artifacts_bucket=outputs.get(
            names.Outputs.ARTIFACTS_BUCKET, Settings.from_env().artifacts_bucket
        ),
        search_endpoint=outputs.get(names.Outputs.SEARCH_ENDPOINT),
        sync_schedule_group=outputs.get(names.Outputs.SYNC_SCHEDULE_GROUP),
        sync_runner_arn=outputs.get(names.Outputs.SYNC_RUNNER_ARN),
        sync_scheduler_role_arn=outputs.get(names.Outputs.SYNC_SCHEDULER_ROLE_ARN),
        workflow_schedule_group=outputs.get(names.Outputs.WORKFLOW_SCHEDULE_GROUP),
        workflow_scheduler_role_arn=outputs.get(names.Outputs.WORKFLOW_SCHEDULER_ROLE_ARN),
    )


def on_stack(stack: str, cloudformation: Any = None, *, with_index: bool = True) -> Portability:
    """The portability service of a deployed stack, run in this process."""
    from shared import runtime
    from shared.knowledge.wiring import ENV_WEBHOOK_SECRET_ARN
    from shared.portability.wiring import build_portability
    from shared.workflows.wiring import FUNCTION_ARN_ENV

    outputs = _outputs(stack, cloudformation)
    # The knowledge group reads the secret's ARN from its environment, and the workflow
    # schedules the function they invoke, as their Lambdas do.
    for env, output in (
        (ENV_WEBHOOK_SECRET_ARN, names.Outputs.WEBHOOK_SECRETS),
        (FUNCTION_ARN_ENV, names.Outputs.WORKFLOWS_FUNCTION_ARN),
    ):
        if (value := outputs.get(output)) and not os.environ.get(env):
            os.environ[env] = value
    runtime.configure(_settings_of(outputs))
    return build_portability(with_index=with_index)


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _server() -> LocalServer:
    from shared.local.discovery import TargetNotFound, running_local_server

    try:
        return running_local_server("these commands run through it")
    except TargetNotFound as exc:
        raise CommandFailed(str(exc)) from exc


def _request(server: LocalServer, method: str, path: str, body: object = None) -> Any:
    request = server.request(method, f"/_local{path}", body)
    if token := os.environ.get(TOKEN_ENV):
        request.add_header("Authorization", f"Bearer {token}")
    return request


def _open(server: LocalServer, request: Any, timeout: float = 3600) -> Any:
    try:
        return urllib.request.urlopen(request, timeout=timeout)  # noqa: S310
    except urllib.error.HTTPError as exc:
        raise CommandFailed(server.reason(exc)) from exc


def _call(server: LocalServer, method: str, path: str, body: object = None) -> Any:
    with _open(server, _request(server, method, path, body)) as response:
        return json.loads(response.read())


def export(team: str, out: str | None, stack: str | None = None) -> int:
    """Stream the team's export to `out` (written whole, then renamed) or stdout; the count."""
    count = 0
    last = b""
    bar = _bar("exporting", total=None)
    with _export_stream(team, stack) as answer:
        if out is None:
            for raw in answer:
                sys.stdout.buffer.write(raw)
                count += 1
                bar(count)
            sys.stdout.buffer.flush()
        else:
            target = Path(out).expanduser()
            partial = target.with_name(target.name + ".partial")
            with partial.open("wb") as stream:
                for last in answer:
                    stream.write(last)
                    count += 1
                    bar(count)
                stream.flush()
                os.fsync(stream.fileno())
            if not last.startswith(b'{"kind":"end"'):
                partial.unlink(missing_ok=True)
                raise CommandFailed("the server stopped before the export ended; nothing written")
            os.replace(partial, target)
    bar(None)
    return count - 2  # the header and end lines


@contextmanager
def _export_stream(team: str, stack: str | None) -> Iterator[Iterable[bytes]]:
    """The export's lines: from the local server, or read here from a deployed stack."""
    if stack:
        yield (text.encode() for text in on_stack(stack).export(team))
        return
    server = _server()
    with _open(server, _request(server, "GET", f"/teams/{quote(team, safe='')}/export")) as answer:
        yield answer


def _bar(what: str, total: int | None) -> Any:
    """A counter on a terminal's stderr (nothing when stderr is not a terminal)."""
    if not sys.stderr.isatty():
        return lambda _: None
    from tqdm import tqdm

    bar = tqdm(desc=what, total=total, unit=" lines", file=sys.stderr, mininterval=0.5)

    def step(done: int | None) -> None:
        if done is None:
            bar.close()
            return
        bar.n = done
        if done % 1000 == 0:
            bar.refresh()

    return step


def import_file(path: str, team: str | None, stack: str | None = None) -> dict[str, Any]:
    from shared.connectors.local_files import Progress
    from shared.local.indexing import ProgressDisplay
    from shared.local.progress import ProgressFailed, read_progress

    if stack:
        from shared.portability.format import FormatError
        from shared.storage.team_data import BadRecord

        display = ProgressDisplay()
        try:
            report = on_stack(stack).import_file(
                Path(path), team, lambda p: display(Progress(p.stage, p.done, p.total))
            )
        except (FormatError, BadRecord, ValueError) as exc:
            raise CommandFailed(str(exc)) from exc
        finally:
            display.close()
        return report.to_dict()
    server = _server()
    body: dict[str, Any] = {"path": str(Path(path).expanduser().resolve())}
    if team:
        body["team"] = team
    request = _request(server, "POST", "/teams/import", body)
    request.add_header("Accept", "application/x-ndjson")
    display = ProgressDisplay()
    try:
        with _open(server, request) as answer:
            stats = read_progress(answer, display)
    except ProgressFailed as exc:
        raise CommandFailed(str(exc)) from exc
    finally:
        display.close()
    if stats is not None:
        return stats
    raise CommandFailed(f"the server on port {server.port} stopped before the import finished")


def _run(args: argparse.Namespace) -> int:
    from shared.local.discovery import named_stack

    try:
        if args.command == "export":
            count = export(args.team, args.out, named_stack(args.stack))
            _stderr(
                f"exported {count} records of team {args.team}"
                + (f" to {args.out}" if args.out else "")
            )
        elif args.command == "import":
            print(json.dumps(import_file(args.file, args.team, named_stack(args.stack))))
        elif args.command == "team":
            if not args.yes:
                raise CommandFailed(
                    f"`cairn team delete {args.team}` erases every record of the team for good: "
                    "add --yes to confirm (export it first: cairn export --team "
                    f"{args.team} --out FILE)"
                )
            if stack := named_stack(args.stack):
                counts = on_stack(stack).delete_team(args.team)
            else:
                counts = _call(_server(), "DELETE", f"/teams/{quote(args.team, safe='')}")
            print(json.dumps({"team": args.team, "deleted": counts}))
        elif args.command == "backup":
            target = str(Path(args.file).expanduser().resolve())
            print(json.dumps(_call(_server(), "POST", "/backup", {"path": target})))
        else:
            print(json.dumps(_restore(Path(args.file).expanduser().resolve())))
    except CommandFailed as exc:
        _stderr(f"error: {exc}")
        return 2
    return 0


def _restore(backup_file: Path) -> dict[str, object]:
    from shared.local.folder_lock import FolderInUse, FolderLock
    from shared.local.layout import default_data_dir
    from shared.portability.backup import BackupFailed, restore
    from shared.search.adapters.embedded import INDEX_FILE
    from shared.storage.sqlite import DATABASE_FILE

    if not backup_file.is_file():
        raise CommandFailed(f"no backup file at {backup_file}")
    data_dir = default_data_dir()
    data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    lock = FolderLock(data_dir)
    try:
        lock.acquire()
    except FolderInUse as exc:
        raise CommandFailed(f"{exc}; stop that server first, then restore") from exc
    try:
        return restore(backup_file, data_dir / DATABASE_FILE, data_dir / "search" / INDEX_FILE)
    except BackupFailed as exc:
        raise CommandFailed(str(exc)) from exc
    finally:
        lock.release()


def add_parser(commands: Any) -> None:
    where = (
        "Runs through the running local server of the data folder (found like `cairn tokens` "
        f"finds it); with ${TOKEN_ENV} set, only on that token's team and with its admin scope."
    )
    export_parser = commands.add_parser(
        "export",
        help="write everything a team owns to a JSON Lines file (docs/portability.md)",
        description=where,
    )
    export_parser.add_argument("--team", required=True)
    export_parser.add_argument("--out", help="file to write (default: stdout)")
    export_parser.add_argument("--stack", help=STACK_HELP)
    export_parser.set_defaults(run=_run)

    import_parser = commands.add_parser(
        "import",
        help="load a `cairn export` file (idempotent; rebuilds the team's search index)",
        description=where,
    )
    import_parser.add_argument("file")
    import_parser.add_argument("--team", help="import under this team (default: the file's)")
    import_parser.add_argument("--stack", help=STACK_HELP)
    import_parser.set_defaults(run=_run)

    team = commands.add_parser("team", help="team administration: delete", description=where)
    team_commands = team.add_subparsers(dest="team_command", required=True)
    delete = team_commands.add_parser(
        "delete", help="erase a team in every store, its index, files and tokens"
    )
    delete.add_argument("team")
    delete.add_argument("--yes", action="store_true", help="confirm the erasure")
    delete.add_argument("--stack", help=STACK_HELP)
    team.set_defaults(run=_run)

    backup = commands.add_parser(
        "backup",
        help="an online, consistent copy of the local database (and its search index)",
        description="Copies the running server's database with SQLite's backup API (and the "
        "search index beside it as FILE.search.sqlite3); the copy passes PRAGMA integrity_check.",
    )
    backup.add_argument("file")
    backup.set_defaults(run=_run)

    restore = commands.add_parser(
        "restore",
        help="put a `cairn backup` copy back in the data folder (with the server stopped)",
        description=f"Replaces the database of the data folder (${names.Env.DATA_DIR}) with FILE, "
        "and the search index with FILE.search.sqlite3 when present (else removes it: rebuild "
        "with embeddings_build). Refused while a server holds the folder.",
    )
    restore.add_argument("file")
    restore.set_defaults(run=_run)
