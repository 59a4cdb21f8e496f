"""Builds the gateway from settings: the one place local mode and Lambda share.

The token service it needs comes from `shared.auth.wiring.build_token_service`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shared.app.catalog import gateway_catalog
from shared.auth.oauth import OAuthConfig, OAuthVerifier
from shared.auth.principal import KNOWN_SCOPES
from shared.auth.service import TokenService
from shared.config.settings import Settings
from shared.console.oauth import ConsoleOAuth
from shared.protocol.app import Health, McpApp
from shared.protocol.gateway import GatewayConfig, McpGateway
from shared.protocol.toolsets import Toolsets
from shared.tools.invoker import Invoker

if TYPE_CHECKING:
    from fastapi import FastAPI


def build_gateway(
    settings: Settings,
    invoker: Invoker,
    tokens: TokenService,
    *,
    local: bool = False,
    toolsets: Toolsets | None = None,
) -> McpGateway:
    """The MCP gateway over every group's catalog; `local` admits localhost origins and hosts;
    `toolsets` are what `/mcp/<toolset>` serves (the composition root's, `shared.app.toolsets`).

    Locally the catalog is built from the groups' models (already loaded: they run in this
    process); in Lambda it is the generated `catalog.json`, so the gateway imports no group."""
    if local:
        from shared.app.groups import load_catalog  # not in Lambda

        catalog = load_catalog()
    else:
        catalog = gateway_catalog()
    return McpGateway(
        catalog=catalog,
        invoker=invoker,
        tokens=tokens,
        config=GatewayConfig(
            public_url=settings.public_url,
            allowed_origins=settings.allowed_origins,
            allow_localhost_origins=local,
            loopback_hosts_only=local,
        ),
        oauth=build_oauth_verifier(settings),
        toolsets=toolsets,
    )


def create_app(
    gateway: McpGateway,
    *,
    title: str = "cairn",
    console_oauth: ConsoleOAuth | None = None,
    health: Health | None = None,
) -> McpApp:
    """Routes: POST /mcp (GET and DELETE answer 405), the RFC 9728 metadata document, the
    health check when `health` is given (local mode), and the web console.

    Each MCP request runs through `run_blocking`: in a worker thread under uvicorn, inline in
    Lambda (no thread per invocation).
    """
    app = McpApp(gateway, title=title, health=health)

    def console(api: FastAPI) -> None:
        # The web console for people: its pages call the same tools through this gateway.
        # Imported with FastAPI, when a request first needs the fallback app.
        from fastapi import Depends

        from shared.console import console_router
        from shared.protocol.doors import ThroughGateway

        # Every page and form reads and writes only through the gateway's tools/call with the
        # session's token (shared.console.client): the console's door, for each of its routes.
        door = ThroughGateway("the console: each page and form is a tools/call of its session")
        api.include_router(console_router(gateway, console_oauth), dependencies=[Depends(door)])

    app.add_routes(console)
    return app


def build_oauth_verifier(settings: Settings) -> OAuthVerifier | None:
    """The verifier of the configured authorization server's tokens; None without one."""
    if not settings.oauth_issuer:
        return None
    audience = settings.oauth_audience or (
        settings.public_url.rstrip("/") + "/mcp" if settings.public_url else None
    )
    if audience is None:
        # Audience binding is the point (RFC 8707): never accept tokens for any audience.
        raise ValueError(
            "an OAuth issuer is configured but not the audience its tokens must carry: set "
            "CAIRN_PUBLIC_URL (the audience is <public URL>/mcp) or CAIRN_OAUTH_AUDIENCE"
        )
    return OAuthVerifier(
        OAuthConfig(
            issuer=settings.oauth_issuer,
            audience=audience,
            jwks_url=settings.oauth_jwks_url,
            rate_limit_per_minute=settings.oauth_rate_limit_per_minute,
        )
    )


def build_console_oauth(settings: Settings) -> ConsoleOAuth | None:
    """The console's sign-in through the authorization server, when the stack configures one."""
    if not (settings.oauth_issuer and settings.oauth_login_url and settings.oauth_client_id):
        return None
    if not settings.public_url:
        return None  # no public URL, no redirect URI the client could have registered
    base = settings.public_url.rstrip("/")
    return ConsoleOAuth(
        login_url=settings.oauth_login_url,
        client_id=settings.oauth_client_id,
        resource=settings.oauth_audience or f"{base}/mcp",
        callback_url=f"{base}/console/oauth-callback",
        scopes=tuple(sorted(KNOWN_SCOPES - {"admin"})),
    )
