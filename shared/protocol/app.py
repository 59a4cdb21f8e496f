"""The FastAPI app around the gateway: runs under uvicorn locally and under Mangum in Lambda."""

from __future__ import annotations

import json
import uuid
from typing import Any

from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse

from shared.console import console_router
from shared.console.oauth import ConsoleOAuth
from shared.observability import logger
from shared.protocol import jsonrpc
from shared.protocol.blocking import run_blocking
from shared.protocol.gateway import HttpReply, McpGateway
from shared.protocol.json_input import surrogate_problem
from shared.protocol.jsonrpc import RpcError

MCP_PATH = "/mcp"
METADATA_PATHS = (
    "/.well-known/oauth-protected-resource",
    "/.well-known/oauth-protected-resource/mcp",
)


def _base_url(request: Request) -> str:
    # Behind API Gateway the app sees the forwarded scheme and host, not its own socket.
    scheme = request.headers.get("x-forwarded-proto", request.url.scheme)
    host = request.headers.get("x-forwarded-host", request.headers.get("host", request.url.netloc))
    return f"{scheme}://{host}"


def _to_response(reply: HttpReply) -> Response:
    if reply.body is None:
        return Response(status_code=reply.status, headers=reply.headers)
    try:
        content = json.dumps(
            reply.body, ensure_ascii=False, allow_nan=False, separators=(",", ":")
        ).encode("utf-8")
    except (ValueError, UnicodeEncodeError):
        # The boundary keeps lone surrogates and NaN out; one that slipped through is a bug to
        # log, never a reason to answer with a bare 500 page.
        logger.exception("reply not encodable as JSON")
        return _internal_error(reply.body.get("id"))
    return Response(content, reply.status, reply.headers, media_type="application/json")


def _internal_error(request_id: Any) -> Response:
    reference = uuid.uuid4().hex
    usable = isinstance(request_id, int) or (
        isinstance(request_id, str) and surrogate_problem(request_id) is None
    )
    body = jsonrpc.error_response(
        request_id if usable else None,
        RpcError(jsonrpc.INTERNAL_ERROR, f"Internal error (request {reference})"),
    )
    return JSONResponse(body, status_code=500)


def create_app(
    gateway: McpGateway,
    *,
    title: str = "cairn",
    console_oauth: ConsoleOAuth | None = None,
) -> FastAPI:
    """Routes: POST /mcp (GET and DELETE answer 405), and the RFC 9728 metadata document.

    Each MCP request runs through `run_blocking`: in a worker thread under uvicorn, inline in
    Lambda (no thread per invocation).
    """
    app = FastAPI(title=title, docs_url=None, redoc_url=None, openapi_url=None)

    @app.post(MCP_PATH)
    async def mcp_post(request: Request) -> Response:
        body = await request.body()
        headers = {k.lower(): v for k, v in request.headers.items()}
        try:
            reply = await run_blocking(gateway.handle_post, body, headers, _base_url(request))
        except Exception:
            logger.exception("request failed outside the gateway's error model")
            return _internal_error(None)
        return _to_response(reply)

    @app.api_route(MCP_PATH, methods=["GET", "DELETE", "PUT", "PATCH"])
    async def mcp_other(request: Request) -> Response:
        # Stateless server: no server-to-client stream (GET) and no session to end (DELETE).
        return Response(status_code=405, headers={"Allow": "POST"})

    # A Response, not a dict: a route returning a model or dict makes FastAPI build a response
    # field at start-up (and import pydantic.v1 to check its kind), in every cold start.
    async def metadata(request: Request) -> Response:
        return JSONResponse(gateway.protected_resource_metadata(_base_url(request)))

    for path in METADATA_PATHS:
        app.add_api_route(path, metadata, methods=["GET"])

    # The web console for people: its pages call the same tools through this gateway.
    app.include_router(console_router(gateway, console_oauth))
    return app
