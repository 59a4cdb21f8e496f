"""The gateway's ASGI app: runs under uvicorn locally and under Mangum in Lambda.

The hot routes — POST /mcp (and the 405 of its other methods), the RFC 9728 metadata and, when
given, the health check — are served by a few lines of plain ASGI (`McpApp`). Everything else
(the web console, the knowledge capture routes, the local admin API, FastAPI's own 404/405/
redirect answers) is a FastAPI app that is imported and built only when a request first needs
it. FastAPI's import and its middleware stack were about 1.5x `import boto3` of the gateway's
cold start and a third of the server's CPU per tool call (py-spy, `cairn bench store`'s claim
race); the answers are byte for byte those the FastAPI routes gave.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Awaitable, Callable, MutableMapping
from typing import TYPE_CHECKING, Any

from shared.observability import logger
from shared.protocol import jsonrpc
from shared.protocol.blocking import run_blocking
from shared.protocol.gateway import HttpReply, McpGateway
from shared.protocol.jsonrpc import RpcError
from shared.tools.json_input import surrogate_problem

if TYPE_CHECKING:
    from fastapi import FastAPI


Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
Health = Callable[[], tuple[int, dict[str, Any]]]
Routes = Callable[["FastAPI"], None]
# Status, headers, body, content type.
Answer = tuple[int, list[tuple[bytes, bytes]], bytes, bytes | None]

MCP_PATH = "/mcp"
# Seed 004's documented endpoint (NullBlock's `POST /mcp/jsonrpc`): `/mcp` under another name,
# auth included. It is no toolset (`jsonrpc` names none), and its metadata is /mcp's.
JSONRPC_PATH = "/mcp/jsonrpc"
METADATA_PATHS = (
    "/.well-known/oauth-protected-resource",
    "/.well-known/oauth-protected-resource/mcp",
)
# `/mcp/<toolset>` (shared.protocol.toolsets) and its RFC 9728 metadata.
_TOOLSET_PREFIX = MCP_PATH + "/"
_TOOLSET_METADATA_PREFIX = METADATA_PATHS[1] + "/"


def _segment(path: str, prefix: str) -> str | None:
    """`memory+search` of `/mcp/memory+search` (prefix `/mcp/`); None for other paths."""
    if not path.startswith(prefix) or path == JSONRPC_PATH:
        return None
    segment = path[len(prefix) :]
    return segment if segment and "/" not in segment else None


HEALTH_PATH = "/healthz"
# The methods the FastAPI app gave a bare 405 on /mcp (HEAD comes with GET); any other
# method got FastAPI's JSON 405 from the POST route, and still does (through the fallback).
_MCP_OTHER_METHODS = frozenset({"GET", "HEAD", "DELETE", "PUT", "PATCH"})
_READ_METHODS = frozenset({"GET", "HEAD"})
_JSON = b"application/json"
_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}


def _dumps(body: Any) -> bytes:
    # As Starlette's JSONResponse renders (compact, UTF-8, no NaN).
    return json.dumps(body, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode(
        "utf-8"
    )


class McpApp:
    """The ASGI app of the gateway: hot routes in plain ASGI, the rest in a lazy FastAPI app.

    `add_routes(install)` registers a function that adds routes to the FastAPI app when it is
    built (at the first request no hot route answers), so the modules defining those routes —
    and FastAPI itself — are imported only then:

    >>> app = McpApp(gateway)                                       # doctest: +SKIP
    >>> app.add_routes(lambda api: api.include_router(my_router()))  # doctest: +SKIP
    """

    def __init__(
        self,
        gateway: McpGateway,
        *,
        title: str = "cairn",
        health: Health | None = None,
    ) -> None:
        self.gateway = gateway
        self._title = title
        self._health = health
        self._routes: list[Routes] = []
        self._fallback: FastAPI | None = None
        self._building = threading.Lock()

    def add_routes(self, install: Routes) -> None:
        """Have `install(fastapi_app)` add routes to the fallback app (now, if it is built)."""
        with self._building:
            self._routes.append(install)
            if self._fallback is not None:
                install(self._fallback)
                try:
                    _check_doors(self._fallback)
                except RuntimeError:
                    # Rebuilt without it at the next request: the route is never served.
                    self._routes.remove(install)
                    self._fallback = None
                    raise

    @property
    def fallback_built(self) -> bool:
        """Has any request (or caller) needed the FastAPI app yet?"""
        return self._fallback is not None

    @property
    def fallback(self) -> FastAPI:
        """The FastAPI app for every request the hot routes do not answer, built once."""
        if self._fallback is None:
            with self._building:
                if self._fallback is None:
                    self._fallback = self._build_fallback()
        return self._fallback

    def _build_fallback(self) -> FastAPI:
        from fastapi import FastAPI
        from starlette.requests import Request
        from starlette.responses import Response

        # Every route's body is bounded while it is read (Content-Length first, then the bytes
        # as they arrive): 413 past the gateway's limit, never a body held whole in memory.
        app = FastAPI(
            title=self._title,
            docs_url=None,
            redoc_url=None,
            openapi_url=None,
            max_body_size=self.gateway.max_body_bytes,
        )
        gateway = self.gateway

        # The hot routes again (plain Starlette routes: nothing for FastAPI to inspect), so that
        # what reaches FastAPI — an unusual method, a path with a trailing slash — is answered
        # as it always was: FastAPI's JSON 405 or its redirect.
        async def mcp_post(request: Request) -> Response:
            status, headers, body, content_type = await _answer_post(
                gateway,
                await request.body(),
                _header_dict(request.scope),
                _base_url(request.scope),
                request.path_params.get("toolset"),
            )
            response = Response(body, status)
            response.raw_headers = _headers(headers, body, content_type)
            return response

        def unknown(request: Request) -> Response | None:
            toolset = request.path_params.get("toolset")
            if toolset is None or gateway.knows_toolset(toolset):
                return None
            return Response(_dumps({"detail": "Not Found"}), 404, media_type="application/json")

        async def mcp_other(request: Request) -> Response:
            # Stateless server: no server-to-client stream (GET) and no session to end (DELETE).
            return unknown(request) or Response(status_code=405, headers={"Allow": "POST"})

        async def metadata(request: Request) -> Response:
            if refused := unknown(request):
                return refused
            body = _dumps(
                gateway.protected_resource_metadata(
                    _base_url(request.scope), request.path_params.get("toolset")
                )
            )
            return Response(body, media_type="application/json")

        from shared.protocol import doors

        doors.declare(mcp_post, doors.ThroughGateway("MCP: the gateway authorizes each tool call"))
        doors.declare(mcp_other, doors.Public("405: no stream, no session"))
        doors.declare(metadata, doors.Public("RFC 9728 protected-resource metadata"))
        # JSONRPC_PATH first: `{toolset}` would take it otherwise.
        for path in (MCP_PATH, JSONRPC_PATH, _TOOLSET_PREFIX + "{toolset}"):
            app.add_route(path, mcp_post, methods=["POST"])
            app.add_route(path, mcp_other, methods=["GET", "DELETE", "PUT", "PATCH"])
        for path in (*METADATA_PATHS, _TOOLSET_METADATA_PREFIX + "{toolset}"):
            app.add_route(path, metadata, methods=["GET"])
        app.add_exception_handler(doors.DoorRefused, doors.refused)

        for install in self._routes:
            install(app)
        _check_doors(app)
        return app

    def hot_routes(self) -> list[tuple[str, str, str]]:
        """`(methods, path, door)` of the routes answered before the FastAPI app (the route
        walk's view of them: `shared.protocol.doors`)."""
        routes = [
            ("POST", MCP_PATH, "gateway"),
            ("POST", JSONRPC_PATH, "gateway"),
            ("POST", _TOOLSET_PREFIX + "{toolset}", "gateway"),
            (",".join(sorted(_MCP_OTHER_METHODS)), MCP_PATH, "public"),
            (",".join(sorted(_MCP_OTHER_METHODS)), JSONRPC_PATH, "public"),
            (",".join(sorted(_MCP_OTHER_METHODS)), _TOOLSET_PREFIX + "{toolset}", "public"),
        ]
        routes += [("GET,HEAD", path, "public") for path in METADATA_PATHS]
        routes.append(("GET,HEAD", _TOOLSET_METADATA_PREFIX + "{toolset}", "public"))
        if self._health is not None:
            routes.append(("GET,HEAD", HEALTH_PATH, "public"))
        return routes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            path = _route_path(scope)
            method = scope["method"]
            toolset = _segment(path, _TOOLSET_PREFIX)
            is_mcp = path in (MCP_PATH, JSONRPC_PATH) or toolset is not None
            if is_mcp and method == "POST":
                # The gateway checks the Host itself, answering in JSON-RPC.
                await self._mcp_post(scope, receive, send, toolset)
                return
            if not self.gateway.host_allowed(
                _header(scope, b"host"), _header(scope, b"x-forwarded-host")
            ):
                # Every other route too (metadata, health, console, capture, admin): local mode
                # answers loopback hosts only, and never builds a URL from an unchecked one.
                await _send(send, 403, [], _dumps({"error": "Host not allowed"}), _JSON)
                return
            if is_mcp:
                if method in _MCP_OTHER_METHODS and (
                    toolset is None or self.gateway.knows_toolset(toolset)
                ):
                    await _send(send, 405, [(b"allow", b"POST")], b"")
                    return
            elif method in _READ_METHODS:
                toolset = _segment(path, _TOOLSET_METADATA_PREFIX)
                if path in METADATA_PATHS or (
                    toolset is not None and self.gateway.knows_toolset(toolset)
                ):
                    metadata = self.gateway.protected_resource_metadata(_base_url(scope), toolset)
                    await _send(send, 200, [], _dumps(metadata), _JSON)
                    return
                if path == HEALTH_PATH and self._health is not None:
                    status, report = await run_blocking(self._health)
                    await _send(send, status, [], _dumps(report), _JSON)
                    return
        elif scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        await self.fallback(scope, receive, send)

    async def _mcp_post(
        self, scope: Scope, receive: Receive, send: Send, toolset: str | None = None
    ) -> None:
        # Bounded while read: a declared length past the limit is refused before any byte is
        # read, and a body that grows past it (chunked, or a false length) when it does.
        limit = self.gateway.max_body_bytes
        declared = _header(scope, b"content-length")
        if declared is not None and declared.strip().isdigit() and int(declared) > limit:
            await _send(send, *_too_large(limit))
            return
        chunks = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return  # the client is gone: nobody to answer, and no tool call started
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                await _send(send, *_too_large(limit))
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        await _send(
            send,
            *await _answer_post(self.gateway, body, _header_dict(scope), _base_url(scope), toolset),
        )


def _check_doors(app: FastAPI) -> None:
    """One door for every route (shared.protocol.doors): a route that declares none is a
    route nobody authorizes, so the app is not served with it."""
    from shared.protocol.doors import undeclared

    if missing := undeclared(app.routes):
        raise RuntimeError(f"routes without a declared door: {', '.join(missing)}")


async def _answer_post(
    gateway: McpGateway,
    body: bytes,
    headers: dict[str, str],
    base_url: str,
    toolset: str | None = None,
) -> Answer:
    """Status, headers, body and content type answering one POST /mcp (or /mcp/<toolset>).

    The reply is encoded in the worker thread too: the event loop only moves bytes."""
    try:
        return await run_blocking(
            lambda: _encoded(gateway.handle_post(body, headers, base_url, toolset))
        )
    except Exception:
        logger.exception("request failed outside the gateway's error model")
        return _internal_error(None)


def _encoded(reply: HttpReply) -> Answer:
    headers = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in reply.headers.items()]
    if reply.body is None:
        return reply.status, headers, b"", None
    try:
        content = _dumps(reply.body)
    except (ValueError, UnicodeEncodeError):
        # The boundary keeps lone surrogates and NaN out; one that slipped through is a bug to
        # log, never a reason to answer with a bare 500 page.
        logger.exception("reply not encodable as JSON")
        return _internal_error(reply.body.get("id"))
    return reply.status, headers, content, _JSON


def _too_large(limit: int) -> Answer:
    # As the gateway answers a body past its limit (shared.protocol.gateway).
    error = RpcError(jsonrpc.INVALID_REQUEST, f"request body exceeds {limit} bytes")
    return 413, [], _dumps(jsonrpc.error_response(None, error)), _JSON


def _internal_error(request_id: Any) -> Answer:
    reference = uuid.uuid4().hex
    usable = isinstance(request_id, int) or (
        isinstance(request_id, str) and surrogate_problem(request_id) is None
    )
    body = jsonrpc.error_response(
        request_id if usable else None,
        RpcError(jsonrpc.INTERNAL_ERROR, f"Internal error (request {reference})"),
    )
    return 500, [], _dumps(body), _JSON


async def _send(
    send: Send,
    status: int,
    headers: list[tuple[bytes, bytes]],
    body: bytes,
    content_type: bytes | None = None,
) -> None:
    start = {"status": status, "headers": _headers(headers, body, content_type)}
    await send({"type": "http.response.start", **start})
    await send({"type": "http.response.body", "body": body})


def _headers(
    headers: list[tuple[bytes, bytes]], body: bytes, content_type: bytes | None
) -> list[tuple[bytes, bytes]]:
    # Starlette's order: the route's own headers, then content-length, then content-type.
    complete = [*headers, (b"content-length", str(len(body)).encode("latin-1"))]
    if content_type is not None:
        complete.append((b"content-type", content_type))
    return complete


def _header_dict(scope: Scope) -> dict[str, str]:
    # Lower-case names, the last of repeated headers winning (as a dict over Starlette's
    # `request.headers.items()` did).
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key.lower() == name:
            return str(value.decode("latin-1"))
    return None


def _base_url(scope: Scope) -> str:
    """Scheme and host the client addressed: behind API Gateway or CloudFront the forwarded
    ones, not the app's own socket."""
    scheme = _header(scope, b"x-forwarded-proto") or scope.get("scheme", "http")
    host = _header(scope, b"x-forwarded-host") or _header(scope, b"host")
    if host is None:
        # Starlette's `request.url.netloc` without a Host header: the server's address.
        server = scope.get("server")
        if server is None:
            host = ""
        else:
            name, port = server
            default = _DEFAULT_PORTS.get(scope.get("scheme", "http"))
            host = name if port == default else f"{name}:{port}"
    return f"{scheme}://{host}"


def _route_path(scope: Scope) -> str:
    # As Starlette routes: the path below the app's root path (a mount, a stage prefix).
    path: str = scope["path"]
    root: str = scope.get("root_path", "")
    if root and path.startswith(root) and path != root and path[len(root)] == "/":
        return path[len(root) :]
    return path


async def _lifespan(receive: Receive, send: Send) -> None:
    # Nothing to start or stop: the runtime is built before the app and stopped after it.
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
