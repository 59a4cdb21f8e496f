"""The FastAPI app around the gateway: runs under uvicorn locally and under Mangum in Lambda."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from shared.protocol.gateway import HttpReply, McpGateway

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
    return JSONResponse(reply.body, status_code=reply.status, headers=reply.headers)


def create_app(gateway: McpGateway, *, title: str = "cairn") -> FastAPI:
    """Routes: POST /mcp (GET and DELETE answer 405), and the RFC 9728 metadata document."""
    app = FastAPI(title=title, docs_url=None, redoc_url=None, openapi_url=None)

    @app.post(MCP_PATH)
    async def mcp_post(request: Request) -> Response:
        body = await request.body()
        headers = {k.lower(): v for k, v in request.headers.items()}
        # Tool calls block on I/O (DynamoDB, the index): keep the event loop free.
        reply = await run_in_threadpool(gateway.handle_post, body, headers, _base_url(request))
        return _to_response(reply)

    @app.api_route(MCP_PATH, methods=["GET", "DELETE", "PUT", "PATCH"])
    async def mcp_other(request: Request) -> Response:
        # Stateless server: no server-to-client stream (GET) and no session to end (DELETE).
        return Response(status_code=405, headers={"Allow": "POST"})

    async def metadata(request: Request) -> dict[str, Any]:
        return gateway.protected_resource_metadata(_base_url(request))

    for path in METADATA_PATHS:
        app.add_api_route(path, metadata, methods=["GET"])

    return app
