"""The local server's admin routes for `cairn export`, `cairn import`, `cairn team delete` and
`cairn backup` (docs/portability.md). They sit behind the admin key, as `cairn tokens` does;
a request that also carries a team token (`Authorization: Bearer`, from `$CAIRN_TOKEN`) is
held to that token: it may act only on its own team, and only with the `admin` scope.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import APIRouter, Header, HTTPException
from fastapi.responses import StreamingResponse
from pydantic import BaseModel

from shared import runtime
from shared.auth.service import TokenService
from shared.local.layout import NDJSON
from shared.local.progress import stream_progress
from shared.portability.backup import BackupFailed, backup
from shared.portability.format import FormatError
from shared.portability.wiring import build_portability
from shared.storage.team_data import BadRecord


class ImportRequest(BaseModel):
    path: str
    team: str | None = None


class BackupRequest(BaseModel):
    path: str


def _held_to_token(tokens: TokenService, authorization: str | None, team: str) -> None:
    """Refuse (403) when a team token came along that may not administer `team`."""
    if not authorization:
        return
    secret = authorization.removeprefix("Bearer ").strip()
    record = tokens.find(secret)
    if record is None or not tokens.is_active(record):
        raise HTTPException(status_code=403, detail="the token is unknown, revoked or expired")
    if record.team != team or "admin" not in record.scopes:
        raise HTTPException(
            status_code=403,
            detail=f"the token ({record.token_id}, team {record.team}) may not administer team "
            f"{team}: that takes a token of team {team} with the admin scope",
        )


def portability_router(tokens: TokenService) -> APIRouter:
    """The routes, to include in the admin router (which holds the admin key door)."""
    router = APIRouter()

    @router.get("/teams/{team}/export")
    def export(team: str, authorization: str | None = Header(default=None)) -> Any:
        _held_to_token(tokens, authorization, team)
        lines = (text.encode() for text in build_portability().export(team))
        return StreamingResponse(lines, media_type=NDJSON)

    @router.post("/teams/import")
    def import_file(body: ImportRequest, authorization: str | None = Header(default=None)) -> Any:
        path = Path(body.path)
        if not path.is_file():
            raise HTTPException(status_code=404, detail=f"no file at {path}")
        portability = build_portability()
        if authorization:
            from shared.portability.format import ExportReader

            try:
                exported = str(ExportReader(path).header["team"])
            except FormatError as exc:
                raise HTTPException(status_code=422, detail=str(exc)) from exc
            _held_to_token(tokens, authorization, body.team or exported)

        def run(report: Any) -> dict[str, Any]:
            try:
                return portability.import_file(path, body.team, report).to_dict()
            except (FormatError, BadRecord, ValueError) as exc:
                raise HTTPException(status_code=422, detail=str(exc)) from exc

        return StreamingResponse(stream_progress(run), media_type=NDJSON)

    @router.delete("/teams/{team}")
    def delete(team: str, authorization: str | None = Header(default=None)) -> dict[str, int]:
        _held_to_token(tokens, authorization, team)
        return build_portability().delete_team(team)

    @router.post("/backup")
    def make_backup(body: BackupRequest) -> dict[str, object]:
        from shared.search.adapters.embedded import INDEX_FILE
        from shared.search.wiring import search_dir

        index = search_dir(runtime.settings()) / INDEX_FILE
        try:
            return backup(runtime.database().path, Path(body.path), index).to_dict()
        except BackupFailed as exc:
            raise HTTPException(status_code=422, detail=str(exc)) from exc

    return router
