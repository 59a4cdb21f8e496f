"""One door for every route: each HTTP route declares how it is authorized, and the declaration
is the check.

A route of the gateway's app is one of:

- `Public(why)` — serves nothing of a team's data (metadata, health, static files, sign-in);
- `ToolDoor(gateway, tool)` — stands for an MCP tool and is authorized exactly as `tools/call`
  authorizes that tool (`McpGateway.authorize`: Host and Origin, token, rate limit, allow-list
  or context, scope; the team is the token's). The endpoint receives the `Principal`;
- `ThroughGateway(why)` — reaches team data only through the gateway's own `tools/call` with
  the caller's token (POST /mcp itself, the web console's pages and forms);
- `SignedDelivery(tool)` — a webhook whose body is signed with the team's secret, verified by
  the tool before anything is stored (no token exists to present);
- `AdminKey(key)` — the local server's admin API: the key file in the (0700) data folder.

A FastAPI route declares its door as a dependency (`Depends(door)`, or
`dependencies=[Depends(door)]`), a plain Starlette route by `declare(endpoint, door)`;
`undeclared(app)` lists the routes that declare none, and the app refuses to build with any
(`shared.protocol.app`), so a new route cannot forget its door.

>>> door = ToolDoor(gateway, "ingest_events")                              # doctest: +SKIP
>>> @router.post("/ingest/events")                                          # doctest: +SKIP
... async def ingest(request: Request, principal: Principal = Depends(door)) -> Response: ...
"""

# No `from __future__ import annotations`: FastAPI reads the doors' `__call__` signatures
# (a `Request` parameter) from instances, which carry no globals to resolve string annotations.
import secrets
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from shared.auth.principal import Principal
from shared.protocol.blocking import run_blocking
from shared.protocol.gateway import McpGateway
from shared.protocol.jsonrpc import RpcError

_ATTRIBUTE = "__cairn_door__"


class DoorRefused(Exception):
    """A door's refusal: answered `{"error": message}` with `status` and `headers`."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}


async def refused(request: Request, exc: Exception) -> Response:
    """The app's exception handler of `DoorRefused`."""
    assert isinstance(exc, DoorRefused)
    return JSONResponse({"error": exc.message}, exc.status, headers=exc.headers or None)


class Door:
    """How a route is authorized; `kind` names it in the route walk."""

    kind = "door"

    def describe(self) -> str:
        return self.kind


@dataclass(frozen=True, eq=False)
class Public(Door):
    """No team data behind the route: `why` says what it serves."""

    why: str
    kind = "public"

    async def __call__(self) -> None:
        return None

    def describe(self) -> str:
        return f"public: {self.why}"


@dataclass(frozen=True, eq=False)
class ThroughGateway(Door):
    """Every read and write of the route is a `tools/call` through the gateway."""

    why: str
    kind = "gateway"

    async def __call__(self) -> None:
        return None

    def describe(self) -> str:
        return f"through the gateway: {self.why}"


@dataclass(frozen=True, eq=False)
class ToolDoor(Door):
    """The route stands for `tool`: the caller is authorized as `tools/call` of `tool`."""

    gateway: McpGateway
    tool: str
    kind = "tool"

    async def __call__(self, request: Request) -> Principal:
        headers = {k.lower(): v for k, v in request.headers.items()}
        base_url = f"{request.url.scheme}://{request.url.netloc}"
        try:
            return await run_blocking(self.gateway.authorize, headers, base_url, self.tool)
        except RpcError as exc:
            raise DoorRefused(exc.http_status, exc.message, exc.headers) from exc

    def describe(self) -> str:
        return f"tool: {self.tool}"


@dataclass(frozen=True, eq=False)
class SignedDelivery(Door):
    """A webhook for `tool`: its signature (the team's secret) is checked by the tool itself."""

    tool: str
    kind = "signed"

    async def __call__(self) -> None:
        return None

    def describe(self) -> str:
        return f"signed delivery: {self.tool}"


@dataclass(frozen=True, eq=False)
class AdminKey(Door):
    """The local admin API: the `X-Cairn-Admin-Key` header must match the key file."""

    key: Callable[[], str]
    header: str = "x-cairn-admin-key"
    kind = "admin"

    async def __call__(self, request: Request) -> None:
        given = request.headers.get(self.header)
        expected = self.key()
        if not given or not expected or not secrets.compare_digest(given, expected):
            raise DoorRefused(401, "admin key required")

    def describe(self) -> str:
        return "admin key"


def declare(endpoint: Callable[..., Any], door: Door) -> Callable[..., Any]:
    """Declare the door of a plain Starlette route's endpoint (which checks it itself)."""
    setattr(endpoint, _ATTRIBUTE, door)
    return endpoint


def door_of(route: Any) -> Door | None:
    """The door a route declares: a `Door` among its FastAPI dependencies, else the one
    `declare` put on its endpoint; None when it declares none."""
    pending = list(getattr(route, "dependencies", None) or [])
    dependant = getattr(route, "dependant", None)
    if dependant is not None:
        pending += list(dependant.dependencies)
    while pending:
        dependency = pending.pop()
        call = getattr(dependency, "call", None) or getattr(dependency, "dependency", None)
        if isinstance(call, Door):
            return call
        pending.extend(getattr(dependency, "dependencies", None) or [])
    for holder in (route, getattr(route, "starlette_route", None)):
        door = getattr(getattr(holder, "endpoint", None), _ATTRIBUTE, None)
        if isinstance(door, Door):
            return door
    return None


def walk(routes: Iterable[Any]) -> Iterator[tuple[str, str, Door | None]]:
    """`(methods, path, door)` of every route of an app, routers included with
    `include_router` flattened (FastAPI keeps them as one entry each, resolved per request)."""
    for route in routes:
        candidates = getattr(route, "effective_candidates", None)
        if callable(candidates):
            yield from walk(candidates())
            continue
        methods = ",".join(sorted(getattr(route, "methods", None) or ()))
        yield methods, str(getattr(route, "path", route)), door_of(route)


def undeclared(routes: Iterable[Any]) -> list[str]:
    """`METHODS path` of every route that declares no door."""
    return [f"{methods} {path}" for methods, path, door in walk(routes) if door is None]
