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
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from shared.config import names

if TYPE_CHECKING:
    from shared.local.discovery import LocalServer

TOKEN_ENV = "CAIRN_TOKEN"


class CommandFailed(Exception):
    """The command failed; the message says why and what to do."""


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _server() -> LocalServer:
    from shared.local.discovery import TargetNotFound, find_local_server, looked_at

    try:
        server = find_local_server()
    except TargetNotFound as exc:
        raise CommandFailed(str(exc)) from exc
    if server is None:
        raise CommandFailed(
            f"no cairn server is running here (looked at {looked_at()}): start it with "
            "`./cairn serve` (or `make serve`); these commands run through it"
        )
    return server


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


def export(team: str, out: str | None) -> int:
    """Stream the team's export to `out` (written whole, then renamed) or stdout; the count."""
    server = _server()
    count = 0
    bar = _bar("exporting", total=None)
    with _open(server, _request(server, "GET", f"/teams/{quote(team, safe='')}/export")) as answer:
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
                for raw in answer:
                    stream.write(raw)
                    count += 1
                    bar(count)
                stream.flush()
                os.fsync(stream.fileno())
            if not raw.startswith(b'{"kind":"end"'):
                partial.unlink(missing_ok=True)
                raise CommandFailed("the server stopped before the export ended; nothing written")
            os.replace(partial, target)
    bar(None)
    return count - 2  # the header and end lines


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


def import_file(path: str, team: str | None) -> dict[str, Any]:
    from shared.connectors.local_files import Progress
    from shared.local.indexing import ProgressDisplay

    server = _server()
    body: dict[str, Any] = {"path": str(Path(path).expanduser().resolve())}
    if team:
        body["team"] = team
    request = _request(server, "POST", "/teams/import", body)
    request.add_header("Accept", "application/x-ndjson")
    display = ProgressDisplay()
    try:
        with _open(server, request) as answer:
            for raw in answer:
                event = json.loads(raw)
                if "stats" in event:
                    stats: dict[str, Any] = event["stats"]
                    return stats
                if "error" in event:
                    raise CommandFailed(event["error"])
                display(Progress(event["stage"], event["done"], event["total"]))
    finally:
        display.close()
    raise CommandFailed(f"the server on port {server.port} stopped before the import finished")


def _run(args: argparse.Namespace) -> int:
    try:
        if args.command == "export":
            count = export(args.team, args.out)
            _stderr(
                f"exported {count} records of team {args.team}"
                + (f" to {args.out}" if args.out else "")
            )
        elif args.command == "import":
            print(json.dumps(import_file(args.file, args.team)))
        elif args.command == "team":
            if not args.yes:
                raise CommandFailed(
                    f"`cairn team delete {args.team}` erases every record of the team for good: "
                    "add --yes to confirm (export it first: cairn export --team "
                    f"{args.team} --out FILE)"
                )
            server = _server()
            counts = _call(server, "DELETE", f"/teams/{quote(args.team, safe='')}")
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
    export_parser.set_defaults(run=_run)

    import_parser = commands.add_parser(
        "import",
        help="load a `cairn export` file (idempotent; rebuilds the team's search index)",
        description=where,
    )
    import_parser.add_argument("file")
    import_parser.add_argument("--team", help="import under this team (default: the file's)")
    import_parser.set_defaults(run=_run)

    team = commands.add_parser("team", help="team administration: delete", description=where)
    team_commands = team.add_subparsers(dest="team_command", required=True)
    delete = team_commands.add_parser(
        "delete", help="erase a team in every store, its index, files and tokens"
    )
    delete.add_argument("team")
    delete.add_argument("--yes", action="store_true", help="confirm the erasure")
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
