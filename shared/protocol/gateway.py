"""The MCP gateway: transport rules, authentication, JSON-RPC methods and tool dispatch.

Framework-free on purpose: `handle_post` takes bytes and headers and returns an `HttpReply`, so
the same code runs under FastAPI + uvicorn locally and FastAPI + Mangum in Lambda, and unit tests
need no socket.
"""

from __future__ import annotations

import base64
import hmac
import time
import uuid
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from shared.auth.errors import InvalidToken, RateLimited
from shared.auth.oauth import OAuthVerifier, looks_like_jwt
from shared.auth.principal import Principal
from shared.auth.service import TokenService
from shared.observability import logger, metrics
from shared.protocol import jsonrpc, versions
from shared.protocol.jsonrpc import RpcError
from shared.protocol.tooling import decode_cursor, encode_cursor, error_result, success_result
from shared.protocol.toolsets import ALL, SEPARATOR, Toolsets, UnknownToolset
from shared.protocol.versions import (
    CLIENT_CAPABILITIES_META_KEY,
    PROTOCOL_VERSION_META_KEY,
    SERVER_INFO_META_KEY,
)
from shared.tools import json_input
from shared.tools.catalog import HasEntry, ToolCatalog
from shared.tools.envelope import Envelope, ErrorInfo
from shared.tools.invoker import GroupInvocationError, Invoker
from shared.tools.validation import find_unstorable

SERVER_NAME = "cairn"
SERVER_VERSION = "0.1.0"
DEFAULT_MAX_BODY_BYTES = 1_048_576
NAME_BEARING_METHODS = {"tools/call": "name"}
CACHEABLE_METHODS = frozenset({"server/discover", "tools/list"})
CACHE_TTL_MS = 60_000
# In every -32001: seed 000's message stays exact, `data.how` says how to send a token.
HOW_TO_AUTHENTICATE = (
    "Send a team token in the header `Authorization: Bearer cairn_sk_...` (`cairn tokens "
    "create` makes one). A client that cannot set headers may pass it as the `token` argument "
    "of tools/call instead (seed 000)."
)

# The server's instructions: one sentence per surface, naming only the tools of it the token may
# call; a sentence with none of them is left out, so an agent is never told to call a tool it
# cannot see.
_INSTRUCTION_SENTENCES: tuple[tuple[str, tuple[str, ...], str], ...] = (
    (
        "Before answering anything that may have prior context, look it up with {} first.",
        ("recall", "memory_search"),
        "or",
    ),
    ("Save durable facts with {}.", ("remember", "memory_put"), "or"),
    ("Find indexed documents and memories with {}.", ("search",), "and"),
    ("Hand unfinished work off with {}.", ("store_handoff",), "and"),
    ("Pick handed-off work up with {}.", ("list_handoffs", "claim_handoff"), "and"),
    (
        "Coordinate work with {}.",
        ("task.create", "task.poll", "task.claim", "task.complete"),
        "and",
    ),
)


def instructions_for(callable_tools: Collection[str]) -> str:
    """The server instructions for a token that may call `callable_tools`.

    >>> "store_handoff" in instructions_for({"recall", "store_handoff"})
    True
    >>> "store_handoff" in instructions_for({"recall"})
    False
    """
    sentences = ["cairn is your team's shared memory and coordination server."]
    for template, tools, conjunction in _INSTRUCTION_SENTENCES:
        named = [tool for tool in tools if tool in callable_tools]
        if named:
            sentences.append(template.format(_joined(named, conjunction)))
    sentences.append("You only see the tools your token allows.")
    return " ".join(sentences)


def elsewhere_for(
    toolsets: Toolsets, hidden: Collection[str], callable_count: int, prefix: str = "/mcp"
) -> str:
    """Where a token finds the tools it may call that this connection does not serve.

    >>> from shared.protocol.toolsets import Toolset
    >>> elsewhere_for(Toolsets([Toolset("handoffs", "hand work off", ("store_handoff",))]),
    ...     {"store_handoff"}, 3)  # doctest: +NORMALIZE_WHITESPACE
    'More tools your token may call are on other URLs of this server: /mcp/handoffs (hand work
    off); /mcp/all (all 3). Join toolsets with +, as /mcp/a+b.'
    """
    if not hidden:
        return ""
    places = [
        f"{prefix}/{toolset.name} ({toolset.summary})"
        for toolset in toolsets
        if toolset.listed and set(toolset.tools) & set(hidden)
    ]
    places.append(f"{prefix}/{ALL} (all {callable_count})")
    return (
        "More tools your token may call are on other URLs of this server: "
        + "; ".join(places)
        + f". Join toolsets with {SEPARATOR}, as {prefix}/a{SEPARATOR}b."
    )


def _joined(names: list[str], conjunction: str) -> str:
    if len(names) == 1:
        return names[0]
    return f"{', '.join(names[:-1])} {conjunction} {names[-1]}"


@dataclass
class HttpReply:
    status: int
    body: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class GatewayConfig:
    public_url: str | None = None
    allowed_origins: tuple[str, ...] = ()
    allow_localhost_origins: bool = False
    # Local mode answers only requests addressed to a loopback host: DNS-rebinding protection
    # for a server whose only guard would otherwise be the browser's Origin header.
    loopback_hosts_only: bool = False
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    # Every tool in one page: the MCP SDK client caches output schemas from an uncursored
    # listing only, and re-lists (with a warning) before each call to a tool it has not seen,
    # so a second page cost its tools a round trip per call. Cursors stay for larger sets.
    tools_page_size: int = 200


def _server_info() -> dict[str, str]:
    return {"name": SERVER_NAME, "title": "cairn", "version": SERVER_VERSION}


def _capabilities() -> dict[str, Any]:
    return {"tools": {"listChanged": False}}


def _is_local_origin(origin: str) -> bool:
    host = origin.split("://", 1)[-1].split("/", 1)[0].rsplit(":", 1)[0].strip("[]")
    return host in {"localhost", "127.0.0.1", "::1"}


def _accepts_json(accept: str | None) -> bool:
    if not accept:
        return True  # no Accept header means any media type (RFC 9110 §12.5.1)
    types = {part.split(";", 1)[0].strip().lower() for part in accept.split(",")}
    return bool(types & {"application/json", "application/*", "*/*"})


class McpGateway:
    """Owns the protocol and security; tools run behind the `Invoker`."""

    def __init__(
        self,
        catalog: ToolCatalog | Iterable[HasEntry],
        invoker: Invoker,
        tokens: TokenService,
        config: GatewayConfig | None = None,
        oauth: OAuthVerifier | None = None,
        toolsets: Toolsets | None = None,
    ) -> None:
        # A catalog of the groups' specs (local mode, tests) is described once, here.
        self._catalog = catalog if isinstance(catalog, ToolCatalog) else ToolCatalog(catalog)
        self._invoker = invoker
        self._tokens = tokens
        self._config = config or GatewayConfig()
        # The optional authorization server: its JWT access tokens are accepted beside team
        # tokens (shared.auth.oauth).
        self._oauth = oauth
        # What `/mcp/<toolset>` selects (shared.protocol.toolsets); none: only `all`.
        self._toolsets = toolsets or Toolsets()

    # -- HTTP ------------------------------------------------------------------------------

    @property
    def toolsets(self) -> Toolsets:
        return self._toolsets

    @property
    def max_body_bytes(self) -> int:
        """The largest request body any route reads (413 past it, before it is read)."""
        return self._config.max_body_bytes

    def resource_url(self, base_url: str, toolset: str | None = None) -> str:
        """The MCP URL: `<base>/mcp`, or `<base>/mcp/<toolset>`."""
        suffix = f"/{toolset}" if toolset else ""
        return (self._config.public_url or base_url).rstrip("/") + "/mcp" + suffix

    def metadata_url(self, base_url: str, toolset: str | None = None) -> str:
        base = (self._config.public_url or base_url).rstrip("/")
        suffix = f"/{toolset}" if toolset else ""
        return f"{base}/.well-known/oauth-protected-resource/mcp{suffix}"

    def knows_toolset(self, segment: str) -> bool:
        """Does `segment` (`name`, `a+b`, `all`) name toolsets this gateway serves?"""
        try:
            self._toolsets.select(segment)
        except UnknownToolset:
            return False
        return True

    def protected_resource_metadata(
        self, base_url: str, toolset: str | None = None
    ) -> dict[str, Any]:
        """RFC 9728 metadata: what this resource is and how to present a token to it (per
        MCP URL: `/.well-known/oauth-protected-resource/mcp/<toolset>` names `/mcp/<toolset>`)."""
        scopes = sorted({s for spec in self._catalog for s in spec.scopes})
        metadata: dict[str, Any] = {
            "resource": self.resource_url(base_url, toolset),
            "resource_name": "cairn MCP server",
            "bearer_methods_supported": ["header"],
            "scopes_supported": scopes,
            "authorization_servers": [],
        }
        if self._oauth is not None:
            # As the authorization server knows them (Cognito: `<resource server id>/<scope>`).
            metadata["scopes_supported"] = [self._oauth_scope(scope) for scope in scopes]
            metadata["authorization_servers"] = [self._oauth.config.issuer]
        return metadata

    def _oauth_scope(self, scope: str) -> str:
        assert self._oauth is not None
        return f"{self._oauth.config.audience.rstrip('/')}/{scope}"

    def origin_allowed(self, origin: str | None) -> bool:
        if origin is None:
            return True
        if origin in self._config.allowed_origins:
            return True
        if self._config.public_url and origin.rstrip("/") == _origin_of(self._config.public_url):
            return True
        return self._config.allow_localhost_origins and _is_local_origin(origin)

    def handle_post(
        self,
        body: bytes,
        headers: Mapping[str, str],
        base_url: str,
        toolset: str | None = None,
    ) -> HttpReply:
        """Answer one POST /mcp, or /mcp/<toolset> with `toolset` (`name`, `a+b`, `all`).
        `headers` must have lower-case names."""
        try:
            return self._handle_post(body, headers, base_url, toolset)
        except RpcError as exc:
            return HttpReply(
                exc.http_status, jsonrpc.error_response(exc.request_id, exc), exc.headers
            )

    def host_allowed(self, host: str | None, forwarded_host: str | None = None) -> bool:
        """Is a request addressed to `host` (its Host header, and its X-Forwarded-Host when it
        has one) one this server answers? Local mode answers loopback hosts only
        (DNS-rebinding protection), so every URL it builds from them (the RFC 9728 metadata,
        the 401's challenge) names a checked host; elsewhere any (the deployed stack names
        itself by its configured public URL)."""
        if not self._config.loopback_hosts_only:
            return True
        return _is_local_origin(host or "") and (
            forwarded_host is None or _is_local_origin(forwarded_host)
        )

    def authorize(self, headers: Mapping[str, str], base_url: str, tool: str) -> Principal:
        """The principal of a request that calls `tool` outside JSON-RPC (an HTTP route that
        stands for the tool), checked exactly as `tools/call` checks it: Host and Origin, the
        token (or OAuth access token) and its rate limit, the allow-list or context, the scope.
        `headers` must have lower-case names; a refusal is an `RpcError` carrying its HTTP
        status (401, 403, 429) and headers.

        >>> gateway.authorize({"authorization": "Bearer cairn_sk_..."}, base, "ingest_events")
        ... # doctest: +SKIP
        """
        self._check_transport(headers)
        spec = self._catalog.get(tool)
        if spec is None:
            raise ValueError(f"no tool named {tool!r} in the catalog")  # a wiring mistake
        principal = self._authenticate(headers, base_url)
        self._check_tool(principal, tool, spec.scopes, None)
        return principal

    def _check_transport(self, headers: Mapping[str, str]) -> None:
        if not self.host_allowed(headers.get("host"), headers.get("x-forwarded-host")):
            raise RpcError(jsonrpc.INVALID_REQUEST, "Host not allowed", http_status=403)
        if not self.origin_allowed(headers.get("origin")):
            raise RpcError(jsonrpc.INVALID_REQUEST, "Origin not allowed", http_status=403)

    def _handle_post(
        self, body: bytes, headers: Mapping[str, str], base_url: str, toolset: str | None
    ) -> HttpReply:
        self._check_transport(headers)
        if not _accepts_json(headers.get("accept")):
            raise RpcError(
                jsonrpc.INVALID_REQUEST, "Accept must allow application/json", http_status=406
            )
        content_type = headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if content_type != "application/json":
            raise RpcError(
                jsonrpc.INVALID_REQUEST, "Content-Type must be application/json", http_status=415
            )
        if len(body) > self._config.max_body_bytes:
            raise RpcError(
                jsonrpc.INVALID_REQUEST,
                f"request body exceeds {self._config.max_body_bytes} bytes",
                http_status=413,
            )
        header_version = headers.get("mcp-protocol-version")
        if header_version is not None and header_version not in versions.SUPPORTED_VERSIONS:
            raise RpcError(
                jsonrpc.UNSUPPORTED_PROTOCOL_VERSION,
                f"Unsupported protocol version: {header_version}",
                data={"supported": list(versions.SUPPORTED_VERSIONS), "requested": header_version},
            )
        message = _parse(body)
        request_id = message.get("id")
        try:
            view = self._toolsets.select(toolset) if toolset is not None else None
        except UnknownToolset as exc:
            raise RpcError(
                jsonrpc.INVALID_REQUEST, str(exc), http_status=404, request_id=request_id
            ) from exc
        try:
            # Taken out of the message here, before anything else reads it: the token never
            # reaches a tool, a log line, an event or a stored argument.
            argument_token = _take_argument_token(message)
            principal = self._authenticate(headers, base_url, toolset, argument_token)
            if "method" not in message:
                return HttpReply(202)  # a JSON-RPC response from the client: accepted, no body
            if "id" not in message:
                return HttpReply(202)  # a notification
            if toolset is None:
                view = self._toolsets.select_default(principal.toolsets)
            result = self._dispatch(message, headers, principal, view)
        except RpcError as exc:
            return HttpReply(exc.http_status, jsonrpc.error_response(request_id, exc), exc.headers)
        return HttpReply(200, jsonrpc.success_response(request_id, result))

    def _authenticate(
        self,
        headers: Mapping[str, str],
        base_url: str,
        toolset: str | None = None,
        argument_token: str | None = None,
    ) -> Principal:
        """The caller, from the `Authorization: Bearer` header or, on a `tools/call` without
        that header, from seed 000's `token` argument (the same checks, limit and log line)."""
        authorization = headers.get("authorization", "")
        scheme, _, credential = authorization.partition(" ")
        secret = credential.strip() if scheme.lower() == "bearer" else None
        if argument_token is not None:
            if not authorization.strip():
                secret = argument_token
            elif secret is None or not hmac.compare_digest(
                secret.encode("utf-8"), argument_token.encode("utf-8")
            ):
                raise RpcError(
                    jsonrpc.INVALID_PARAMS,
                    "The `token` argument and the Authorization header carry different "
                    "tokens; send the token one way only (the header is preferred)",
                )
        try:
            if self._oauth is not None and secret and looks_like_jwt(secret):
                principal = self._oauth.verify(secret, toolset)
                self._tokens.limit(principal.token_id, self._oauth.config.rate_limit_per_minute)
                return principal
            return self._tokens.authenticate_and_limit(secret)
        except InvalidToken as exc:
            challenge = f'Bearer resource_metadata="{self.metadata_url(base_url, toolset)}"'
            if secret:  # RFC 6750 §3.1: a token was sent, and it is not accepted
                challenge += ', error="invalid_token"'
            raise RpcError(
                jsonrpc.UNAUTHENTICATED,
                "Invalid or missing authentication token",
                data={"how": HOW_TO_AUTHENTICATE},
                headers={"WWW-Authenticate": challenge},
            ) from exc
        except RateLimited as exc:
            seconds = exc.retry_after_seconds
            raise RpcError(
                jsonrpc.RATE_LIMITED,
                f"Rate limit exceeded. Try again in {seconds} seconds.",
                headers={"Retry-After": str(seconds)},
            ) from exc

    # -- JSON-RPC --------------------------------------------------------------------------

    def _dispatch(
        self,
        message: dict[str, Any],
        headers: Mapping[str, str],
        principal: Principal,
        view: frozenset[str] | None = None,
    ) -> dict[str, Any]:
        method = message["method"]
        params = message.get("params")
        if params is not None and not isinstance(params, dict):
            raise RpcError(jsonrpc.INVALID_PARAMS, "`params` must be an object")
        params = params or {}
        header_version = headers.get("mcp-protocol-version")
        if method == "initialize":
            return self._initialize(params, principal, view)
        modern = method == "server/discover" or (
            header_version is not None and versions.is_modern(header_version)
        )
        if modern:
            version = _check_modern_envelope(method, params, headers)
            result = self._method(method, params, principal, view, modern=True)
            result["resultType"] = "complete"
            if method in CACHEABLE_METHODS:
                # The tool list depends on the token (scopes, allow-list): cache per client only.
                result.update(ttlMs=CACHE_TTL_MS, cacheScope="private")
            meta = result.get("_meta") if isinstance(result.get("_meta"), dict) else {}
            result["_meta"] = {**(meta or {}), SERVER_INFO_META_KEY: _server_info()}
            logger.debug("modern request", extra={"method": method, "version": version})
            return result
        return self._method(method, params, principal, view, modern=False)

    def _method(
        self,
        method: str,
        params: dict[str, Any],
        principal: Principal,
        view: frozenset[str] | None,
        *,
        modern: bool,
    ) -> dict[str, Any]:
        if method == "server/discover":
            return {
                "supportedVersions": list(versions.SUPPORTED_VERSIONS),
                "capabilities": _capabilities(),
                "instructions": self._instructions(principal, view),
            }
        if method == "ping":
            return {}
        if method == "tools/list":
            return self._tools_list(params, principal, view)
        if method == "tools/call":
            return self._tools_call(params, principal, view)
        raise RpcError(
            jsonrpc.METHOD_NOT_FOUND,
            f"Method not found: {method}",
            http_status=404 if modern else 200,
        )

    def _initialize(
        self, params: dict[str, Any], principal: Principal, view: frozenset[str] | None
    ) -> dict[str, Any]:
        return {
            "protocolVersion": versions.negotiate_handshake(params.get("protocolVersion")),
            "capabilities": _capabilities(),
            "serverInfo": _server_info(),
            "instructions": self._instructions(principal, view),
        }

    def _instructions(self, principal: Principal, view: frozenset[str] | None) -> str:
        callable_tools = [entry.name for entry in self._catalog.visible_to(principal)]
        here = [name for name in callable_tools if view is None or name in view]
        hidden = set(callable_tools) - set(here)
        elsewhere = elsewhere_for(self._toolsets, hidden, len(callable_tools))
        return instructions_for(set(here)) + (f"\n{elsewhere}" if elsewhere else "")

    def _tools_list(
        self, params: dict[str, Any], principal: Principal, view: frozenset[str] | None
    ) -> dict[str, Any]:
        visible = [
            entry
            for entry in self._catalog.visible_to(principal)
            if view is None or entry.name in view
        ]
        offset = decode_cursor(params["cursor"]) if params.get("cursor") is not None else 0
        if offset > len(visible):
            raise RpcError(jsonrpc.INVALID_PARAMS, "`cursor` is past the end of the tool list")
        page = visible[offset : offset + self._config.tools_page_size]
        result: dict[str, Any] = {"tools": [entry.descriptor for entry in page]}
        if offset + len(page) < len(visible):
            result["nextCursor"] = encode_cursor(offset + len(page))
        return result

    def _check_tool(
        self,
        principal: Principal,
        name: str,
        scopes: tuple[str, ...],
        view: frozenset[str] | None,
    ) -> None:
        """May `principal` call tool `name` (on a connection serving `view`)? -32002 if not."""
        # Outside the token's allow-list (explicit, or its seed 004 context): tools/list never
        # shows it, and a call is refused as seed 004 asks, -32002 like a missing scope.
        if principal.allowed_tools is not None and name not in principal.allowed_tools:
            where = f"its {principal.context!r} context" if principal.context else "its allow-list"
            raise RpcError(
                jsonrpc.MISSING_SCOPE, f"Token not allowed to call {name}: not in {where}"
            )
        if view is not None and name not in view:
            # Not listed on this URL: refused like a tool outside the allow-list, naming where
            # it is served (a toolset narrows what a connection may call, never widens it).
            places = [
                f"/mcp/{toolset.name}"
                for toolset in self._toolsets
                if toolset.listed and name in toolset.tools
            ]
            raise RpcError(
                jsonrpc.MISSING_SCOPE,
                f"{name} is not served on this URL's toolsets; connect to "
                f"{' or '.join([*places, f'/mcp/{ALL}'])}",
            )
        if not principal.has_any_scope(scopes):
            headers = {}
            if principal.auth_method == "oauth" and self._oauth is not None:
                # Step-up (MCP authorization, RFC 6750 §3.1): the client may ask its
                # authorization server for the missing scope and retry.
                headers["WWW-Authenticate"] = (
                    f'Bearer error="insufficient_scope", '
                    f'scope="{self._oauth_scope(scopes[0])}", '
                    f'resource_metadata="{_metadata_url_of(self._oauth.config.audience)}"'
                )
            raise RpcError(
                jsonrpc.MISSING_SCOPE,
                f"Token missing required scope: {scopes[0]}",
                headers=headers,
            )

    def _tools_call(
        self, params: dict[str, Any], principal: Principal, view: frozenset[str] | None
    ) -> dict[str, Any]:
        name = params.get("name")
        if not isinstance(name, str) or not name:
            raise RpcError(jsonrpc.INVALID_PARAMS, "`name` must be a non-empty string")
        spec = self._catalog.get(name)
        if spec is None:
            raise RpcError(jsonrpc.INVALID_PARAMS, f"Unknown tool: {name}")
        self._check_tool(principal, name, spec.scopes, view)
        arguments = params.get("arguments", {})
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise RpcError(jsonrpc.INVALID_PARAMS, "`arguments` must be an object")
        started = time.perf_counter()
        request_id = uuid.uuid4().hex
        outcome = "ok"
        try:
            # What the stores cannot keep is refused before any tool sees it, so no write can
            # store a value that breaks later reads (issue 18).
            unstorable = find_unstorable(arguments)
            if unstorable is not None:
                outcome = "invalid_argument"
                return error_result(
                    ErrorInfo(
                        code="invalid_argument", message=unstorable.message, field=unstorable.field
                    )
                )
            # The group function validates the arguments against the tool's input model (it
            # owns the models; the gateway carries only their JSON schemas: lean cold start).
            envelope = Envelope(
                tool=name,
                arguments=arguments,
                principal=principal,
                request_id=request_id,
            )
            try:
                reply = self._invoker.invoke(spec.group, envelope, read_only=spec.read_only)
            except Exception as exc:
                outcome = "failed"
                kind = (
                    "group invocation failed"
                    if isinstance(exc, GroupInvocationError)
                    else "tool crashed"
                )
                logger.exception(kind, extra={"tool": name, "request_id": request_id})
                raise RpcError(
                    jsonrpc.INTERNAL_ERROR, f"Internal error (request {request_id})"
                ) from exc
            if reply.error is not None:
                outcome = reply.error.code
                return error_result(reply.error)
            return success_result(reply.result or {}, spec.text_field)
        finally:
            latency_ms = round((time.perf_counter() - started) * 1000, 2)
            logger.info(
                "tool call",
                extra={
                    "tool": name,
                    "team": principal.team,
                    "token_id": principal.token_id,
                    "latency_ms": latency_ms,
                    "outcome": outcome,
                    "request_id": request_id,
                },
            )
            metrics.add_metric(name="ToolCalls", unit="Count", value=1)
            metrics.add_metric(name="ToolLatency", unit="Milliseconds", value=latency_ms)


def _metadata_url_of(resource: str) -> str:
    """RFC 9728 §3.1: the metadata of resource `https://h/mcp` is at
    `https://h/.well-known/oauth-protected-resource/mcp`."""
    parts = urlsplit(resource)
    return f"{parts.scheme}://{parts.netloc}/.well-known/oauth-protected-resource{parts.path}"


def _origin_of(url: str) -> str:
    scheme, _, rest = url.partition("://")
    return f"{scheme}://{rest.split('/', 1)[0]}"


def _parse(body: bytes) -> dict[str, Any]:
    """The JSON-RPC message in `body`, through the input boundary (`json_input`).

    A body that is not strict UTF-8 JSON within the nesting limit is `-32700`; a message of the
    wrong shape `-32600`; a lone surrogate or a non-finite number is `-32700` when it sits in
    the envelope (`id`, `method`) and `-32602` naming its path when it sits in `params`.
    """
    try:
        message = json_input.parse_body(body)
    except json_input.BodyRefused as exc:
        raise RpcError(jsonrpc.PARSE_ERROR, f"Parse error: {exc.message}") from exc
    if isinstance(message, list):
        raise RpcError(jsonrpc.INVALID_REQUEST, "JSON-RPC batches are not supported")
    if not isinstance(message, dict):
        raise RpcError(jsonrpc.INVALID_REQUEST, "a JSON-RPC message must be an object")
    if message.get("jsonrpc") != "2.0":
        raise RpcError(jsonrpc.INVALID_REQUEST, '`jsonrpc` must be "2.0"')
    if "id" in message and not _usable_id(message["id"]):
        raise RpcError(jsonrpc.INVALID_REQUEST, "`id` must be a string or an integer")
    if "method" in message:
        if not isinstance(message["method"], str) or not message["method"]:
            raise RpcError(jsonrpc.INVALID_REQUEST, "`method` must be a non-empty string")
    elif "id" not in message or not ({"result", "error"} & message.keys()):
        raise RpcError(jsonrpc.INVALID_REQUEST, "not a JSON-RPC request, notification or response")
    problem = json_input.find_bad_text(message)
    if problem is not None:
        if problem.path[:1] != ("params",):
            raise RpcError(jsonrpc.PARSE_ERROR, f"Parse error: {problem.message}")
        # Only `params` is at fault: the request's id is usable, so the answer carries it.
        raise RpcError(
            jsonrpc.INVALID_PARAMS,
            f"Invalid params: {problem.message}",
            request_id=message.get("id"),
        )
    return message


def _take_argument_token(message: dict[str, Any]) -> str | None:
    """Remove seed 000's `token` argument from a `tools/call` and return it.

    Only `tools/call` carries arguments; on any other method a `token` is not looked for. A
    `token` that is not a string is refused without echoing it.

    >>> call = {"method": "tools/call", "params": {"name": "x", "arguments": {"token": "s"}}}
    >>> _take_argument_token(call), call["params"]["arguments"]
    ('s', {})
    """
    if message.get("method") != "tools/call":
        return None
    params = message.get("params")
    arguments = params.get("arguments") if isinstance(params, dict) else None
    if not isinstance(arguments, dict) or "token" not in arguments:
        return None
    token = arguments.pop("token")
    if token is None:
        return None
    if not isinstance(token, str):
        raise RpcError(
            jsonrpc.INVALID_PARAMS,
            "`token` must be a string: the team token (or leave it out and send the "
            "Authorization header)",
            request_id=message.get("id"),
        )
    return token


def _usable_id(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, str | int)


def _decode_header_value(value: str | None) -> str | None:
    """Header values outside visible ASCII travel as `=?base64?<payload>?=` (2026-07-28)."""
    if value is None or not (value.startswith("=?base64?") and value.endswith("?=")):
        return value
    try:
        return base64.b64decode(value[len("=?base64?") : -2], validate=True).decode()
    except (ValueError, UnicodeDecodeError):
        return None


def _check_modern_envelope(method: str, params: dict[str, Any], headers: Mapping[str, str]) -> str:
    """2026-07-28: the version lives in `_meta` and must agree with the routing headers."""
    meta = params.get("_meta")
    if not isinstance(meta, dict):
        raise RpcError(
            jsonrpc.INVALID_PARAMS,
            f"params._meta must be an object carrying {PROTOCOL_VERSION_META_KEY!r} and "
            f"{CLIENT_CAPABILITIES_META_KEY!r}",
        )
    missing = [
        k for k in (PROTOCOL_VERSION_META_KEY, CLIENT_CAPABILITIES_META_KEY) if k not in meta
    ]
    if missing:
        raise RpcError(
            jsonrpc.INVALID_PARAMS, f"params._meta is missing required key(s): {', '.join(missing)}"
        )
    version = meta[PROTOCOL_VERSION_META_KEY]
    if headers.get("mcp-protocol-version") != version:
        raise RpcError(
            jsonrpc.HEADER_MISMATCH,
            "MCP-Protocol-Version header does not match params._meta protocol version",
        )
    if headers.get("mcp-method") != method:
        raise RpcError(jsonrpc.HEADER_MISMATCH, "Mcp-Method header does not match the method")
    name_key = NAME_BEARING_METHODS.get(method)
    named = params.get(name_key) if name_key is not None else None
    if named is not None and _decode_header_value(headers.get("mcp-name")) != named:
        raise RpcError(jsonrpc.HEADER_MISMATCH, f"Mcp-Name header does not match params.{name_key}")
    if not isinstance(version, str) or not versions.is_modern(version):
        raise RpcError(
            jsonrpc.UNSUPPORTED_PROTOCOL_VERSION,
            "Unsupported protocol version",
            data={"supported": list(versions.SUPPORTED_VERSIONS), "requested": version},
        )
    return version
