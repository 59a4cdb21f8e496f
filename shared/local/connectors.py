"""The local server's admin API for a team's connectors (`cairn connectors add|list|remove`),
on the sync group's service: the same checks as everywhere (names, kinds, settings)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException
from pydantic import BaseModel, Field

from shared.app.sync_service import build_sync_service
from shared.tools.errors import NotFound, ToolError


class ConnectorRequest(BaseModel):
    """`cairn connectors add`'s body."""

    team: str = Field(min_length=1, max_length=64)
    name: str = Field(min_length=1, max_length=64)
    kind: str = Field(min_length=1, max_length=20)
    config: dict[str, Any] = Field(default_factory=dict)
    replace: bool = False


def _refused(exc: ToolError) -> HTTPException:
    return HTTPException(status_code=404 if isinstance(exc, NotFound) else 422, detail=str(exc))


def add_connector_routes(router: APIRouter) -> None:
    """`/_local/connectors`: POST adds, GET lists a team's, DELETE removes one."""

    @router.post("/connectors")
    def add(body: ConnectorRequest) -> dict[str, Any]:
        try:
            record = build_sync_service().connector_add(
                body.team,
                name=body.name,
                kind=body.kind,
                config=body.config,
                replace=body.replace,
            )
        except ToolError as exc:
            raise _refused(exc) from exc
        return record.public()

    @router.get("/connectors")
    def list_connectors(team: str) -> list[dict[str, Any]]:
        return [record.public() for record in build_sync_service().connector_list(team)]

    @router.delete("/connectors/{team}/{name}")
    def remove(team: str, name: str, keep_documents: bool = False) -> dict[str, Any]:
        try:
            removed = build_sync_service().connector_remove(
                team, name, keep_documents=keep_documents
            )
        except ToolError as exc:
            raise _refused(exc) from exc
        return {"team": team, "name": name, "removed": True, "documents_removed": removed}
