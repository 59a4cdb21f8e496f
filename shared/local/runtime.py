"""`make serve`: the whole system in one process on 127.0.0.1.

Every store runs on its SQLite adapter in one database file of the data folder (`cairn.db`,
see docs/storage.md): a write is on disk before its tool call is answered, claims stay
exactly-once across threads and processes, and nothing of moto runs. A data folder written by
a version before the SQLite store is migrated once at start. A small admin API (loopback only,
guarded by a key file in the data folder) lets the `cairn tokens` CLI manage this server's
tokens.
"""

from __future__ import annotations

import os
import secrets
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from fastapi import FastAPI, Header, HTTPException
from pydantic import BaseModel, ValidationError

from shared import runtime
from shared.app.gateway import build_gateway, create_app
from shared.app.groups import load_groups
from shared.app.reactions import build_workflow_service
from shared.app.sync_service import build_sync_service
from shared.app.toolsets import CORE, TOOLSETS
from shared.auth.contexts import ContextName, ContextRequest, ContextView, unknown_tools
from shared.auth.errors import UnknownToken
from shared.auth.models import TokenRecord, TokenRequest
from shared.auth.service import TokenService
from shared.auth.wiring import build_token_service
from shared.config import names
from shared.config.settings import Settings
from shared.local.folder_lock import FolderLock
from shared.local.layout import ADMIN_HEADER, ADMIN_KEY_FILE, DEV_TOKEN_FILE, NDJSON, PEPPER_FILE
from shared.local.migration import (
    MigrationReport,
    legacy_importers,
    migrate_snapshot,
    pending_snapshot,
)
from shared.local.progress import stream_progress
from shared.protocol.app import McpApp
from shared.tools.invoker import InProcessInvoker
from shared.workflows.local import WorkflowWorker
from shared.workflows.wiring import build_schedule_teams

if TYPE_CHECKING:
    from shared.connectors.local_files import ProgressCallback

_FAKE_AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "cairn-local",
    "AWS_SECRET_ACCESS_KEY": "cairn-local",
    "AWS_SESSION_TOKEN": "cairn-local",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1",
}


def _secret_file(path: Path, make: str) -> str:
    """Read a secret kept in the data folder, creating it (mode 0600) the first time."""
    if path.exists():
        return path.read_text().strip()
    path.touch(mode=0o600)
    path.write_text(make)
    return make


def make_private(data_dir: Path) -> int:
    """Tighten `data_dir` and everything in it to its user only (folders 0700, files 0600);
    how many entries were looser. Symbolic links are left alone (their targets are not ours)."""
    tightened = 0
    for root, folders, files in os.walk(data_dir):
        for name, private in (
            [("", 0o700)] + [(f, 0o700) for f in folders] + [(f, 0o600) for f in files]
        ):
            path = Path(root) / name if name else Path(root)
            try:
                mode = path.lstat().st_mode
            except FileNotFoundError:
                continue
            if stat.S_ISLNK(mode) or stat.S_IMODE(mode) & 0o077 == 0:
                continue
            path.chmod(stat.S_IMODE(mode) & private)
            tightened += 1
    return tightened


Model = TypeVar("Model", bound=BaseModel)


def _validated(model: type[Model], body: dict[str, Any]) -> Model:
    """`body` as `model`, or a 422 naming each field that is wrong."""
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        raise HTTPException(
            status_code=422, detail=exc.errors(include_url=False, include_context=False)
        ) from exc


class IndexRequest(BaseModel):
    """`cairn index PATH [--source NAME] [--team T]`."""

    path: str
    team: str = names.LOCAL_TEAM
    source: str = "local_files"


class CreatedToken(BaseModel):
    """The admin API's answer to a create: the secret, shown this once, and the record."""

    secret: str
    record: TokenRecord


class DevTokenUnusable(Exception):
    """`CAIRN_DEV_TOKEN` names a token that cannot serve as the local dev token."""


@dataclass
class DevToken:
    secret: str
    record: TokenRecord
    from_env: bool


class LocalRuntime:
    """Opens the database (migrating an old data folder once), builds the gateway and the admin
    API; `stop` closes the database."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.app: McpApp | None = None
        self.tokens: TokenService | None = None
        self.admin_key = ""
        self.migration: MigrationReport | None = None
        self.workflow_worker: WorkflowWorker | None = None
        self._lock = FolderLock(data_dir)
        self._umask: int | None = None

    def start(self) -> None:
        """Take the data folder (`FolderInUse` if another process holds it), open it, build
        the app and start the workers."""
        # Private to its user: the folder 0700, what this process creates in it 0600 (umask),
        # and a folder left looser by an older version tightened now, with a line saying so.
        self._umask = os.umask(0o077)
        self.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        if tightened := make_private(self.data_dir):
            print(
                f"cairn: made {tightened} file(s) and folder(s) of {self.data_dir} private to "
                "their user (0600 files, 0700 folders)",
                file=sys.stderr,
                flush=True,
            )
        # One process per data folder, for as long as this runtime runs (released by `stop`,
        # or by the kernel when the process ends however it ends).
        self._lock.acquire()
        try:
            self._start()
        except BaseException:
            self._lock.release()
            os.umask(self._umask)
            raise

    def _start(self) -> None:
        os.environ.update(_FAKE_AWS_ENV)  # never reach a real account from local mode
        os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
        os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
        settings = Settings(
            environment="local",
            storage="sqlite",
            token_pepper=_secret_file(self.data_dir / PEPPER_FILE, secrets.token_hex(32)),
            data_dir=self.data_dir,
        )
        runtime.configure(settings)
        if snapshot := pending_snapshot(self.data_dir):
            self.migration = migrate_snapshot(
                snapshot, legacy_importers(runtime.database()), settings.tables
            )
            print(f"cairn: {self.migration.summary()}", file=sys.stderr, flush=True)
        # No process-wide lock: every store's writes are transactions of their own.
        invoker = InProcessInvoker(load_groups())
        self.tokens = build_token_service(settings)
        gateway = build_gateway(settings, invoker, self.tokens, local=True, toolsets=TOOLSETS)
        self.admin_key = _secret_file(self.data_dir / ADMIN_KEY_FILE, secrets.token_urlsafe(32))
        self.app = create_app(gateway, health=self.health)
        # Seed 003's capture routes (hooks' batch ingest, GitHub webhooks), in-process here, and
        # the admin API: FastAPI routes, built at their first request (shared.protocol.app).
        self.app.add_routes(self._knowledge_routes)
        self.app.add_routes(lambda api: api.include_router(self._admin_router()))
        # Workflows: resume what a restart interrupted, time steps out, fire every team's schedules.
        self.workflow_worker = WorkflowWorker(build_workflow_service(), build_schedule_teams())
        self.workflow_worker.start()
        # Teams' sync schedules (sync_schedule_set) fire here; it stops before the database closes.
        from shared.sync.local import start_local_scheduler

        start_local_scheduler(build_sync_service)

    def _knowledge_routes(self, api: FastAPI) -> None:
        from shared.knowledge.http import knowledge_router, local_invoke

        assert self.app is not None
        api.include_router(knowledge_router(self.app.gateway, local_invoke))

    def health(self) -> tuple[int, dict[str, Any]]:
        """Is the server keeping what it acknowledges? 503 while writes fail to persist."""
        database = runtime.database()
        state = database.health
        body = {
            "status": "failing" if state.failing else "ok",
            "storage": {
                "database": str(database.path),
                "write_failures": state.failures,
                "last_failure": state.last_failure,
                "last_failure_at": state.last_failure_at,
                "schema": database.schema_versions(),
            },
        }
        return (503 if state.failing else 200), body

    def stop(self) -> None:
        """Close the database. Every acknowledged write is already on disk: nothing to save."""
        if self.workflow_worker is not None:
            self.workflow_worker.stop()
        runtime.configure(Settings())
        self._lock.release()
        if self._umask is not None:
            os.umask(self._umask)
            self._umask = None

    def issue(self, request: TokenRequest, secret: str | None = None) -> tuple[str, TokenRecord]:
        assert self.tokens is not None
        issued = self.tokens.issue(request, secret=secret)
        return issued.secret, issued.record

    def provision_dev_token(self, env_secret: str | None) -> DevToken:
        """`CAIRN_DEV_TOKEN` if set, else the token kept in the data folder, else a new one.

        A kept token that was revoked or has expired is replaced by a new one (a revoked token
        stays revoked). `CAIRN_DEV_TOKEN` naming such a token, or a token of another team, is
        refused with `DevTokenUnusable`: its value is the user's to change.
        """
        assert self.tokens is not None
        path = self.data_dir / DEV_TOKEN_FILE
        if env_secret:
            secret: str | None = env_secret
        else:
            secret = path.read_text().strip() if path.exists() else None
        existing = self.tokens.find(secret) if secret else None
        if existing is not None:
            usable = existing.team == names.LOCAL_TEAM and self.tokens.is_active(existing)
            if usable:
                assert secret is not None
                return DevToken(secret, existing, from_env=bool(env_secret))
            if env_secret:
                state = "another team's" if existing.team != names.LOCAL_TEAM else "a revoked"
                raise DevTokenUnusable(
                    f"{names.Env.DEV_TOKEN} names {state} or expired token "
                    f"({existing.token_id}); set it to a new value or unset it"
                )
            secret = None  # the kept token was revoked or expired: mint a fresh one
        # The token people paste into a client gets the core toolsets at `/mcp` (the rest at
        # `/mcp/<toolset>` and `/mcp/all`); one named by CAIRN_DEV_TOKEN (scripts, tests) none.
        request = TokenRequest(
            team=names.LOCAL_TEAM,
            name="dev",
            scopes=("admin",),
            toolsets=None if env_secret else (CORE,),
        )
        secret, record = self.issue(request, secret=secret)
        if not env_secret:
            path.touch(mode=0o600)
            path.write_text(secret)
        return DevToken(secret, record, from_env=bool(env_secret))

    def _admin_router(self) -> Any:
        from fastapi import APIRouter, Depends

        from shared.protocol.doors import AdminKey

        # The key is every route's door, declared once for the router (shared.protocol.doors).
        door = AdminKey(lambda: self.admin_key, header=ADMIN_HEADER.lower())
        router = APIRouter(prefix="/_local", dependencies=[Depends(door)])

        @router.post("/tokens")
        def create(body: dict[str, Any]) -> CreatedToken:
            request = _validated(TokenRequest, body)
            secret, record = self.issue(request)
            return CreatedToken(secret=secret, record=record)

        @router.get("/tokens")
        def list_tokens(team: str) -> list[TokenRecord]:
            assert self.tokens is not None
            return self.tokens.list_team(team)

        @router.get("/tokens/contexts")
        def list_contexts(team: str) -> list[ContextView]:
            assert self.tokens is not None
            return self.tokens.contexts(team)

        @router.put("/tokens/contexts")
        def set_context(body: dict[str, Any]) -> ContextView:
            assert self.tokens is not None
            request = _validated(ContextRequest, body)
            served = {name for group in load_groups().values() for name in group.tools}
            if unknown := unknown_tools(request, served):
                raise HTTPException(
                    status_code=422, detail=f"cairn serves no tool named {', '.join(unknown)}"
                )
            return self.tokens.set_context(request, by="cli")

        @router.delete("/tokens/contexts/{team}/{name}")
        def reset_context(team: str, name: ContextName) -> ContextView:
            assert self.tokens is not None
            return self.tokens.reset_context(team, name)

        @router.delete("/tokens/{token_id}")
        def revoke(token_id: str) -> dict[str, Any]:
            assert self.tokens is not None
            try:
                revocation = self.tokens.revoke(token_id)
            except UnknownToken as exc:
                raise HTTPException(status_code=404, detail=str(exc)) from exc
            return revocation.to_wire()  # the record, plus the ids revoked with it

        from shared.local.connectors import add_connector_routes

        add_connector_routes(router)  # `cairn connectors`

        @router.post("/index")
        def index(
            body: IndexRequest,
            accept: str | None = Header(default=None),
        ) -> Any:
            if accept == NDJSON:  # `cairn index`: progress lines, then the stats
                from fastapi.responses import StreamingResponse

                lines = stream_progress(lambda report: self.index(body, report))
                return StreamingResponse(lines, media_type=NDJSON)
            return self.index(body)

        # `cairn export`, `cairn import`, `cairn team delete`, `cairn backup`.
        from shared.local.portability_routes import portability_router

        assert self.tokens is not None
        router.include_router(portability_router(self.tokens))
        return router

    def index(
        self, request: IndexRequest, progress: ProgressCallback | None = None
    ) -> dict[str, int]:
        """Index a folder of this machine into the local store (`cairn index`)."""
        from shared.connectors.local_files import index_path

        try:
            stats = index_path(request.path, request.team, request.source, progress=progress)
        except FileNotFoundError as exc:
            raise HTTPException(status_code=404, detail=str(exc)) from exc
        return stats.to_dict()
