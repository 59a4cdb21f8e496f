"""Builds the gateway from settings: the one place local mode and Lambda share.

The token service it needs comes from `shared.auth.wiring.build_token_service`.
"""

from __future__ import annotations

from shared.auth.oauth import OAuthConfig, OAuthVerifier
from shared.auth.principal import KNOWN_SCOPES
from shared.auth.service import TokenService
from shared.config.settings import Settings
from shared.console.oauth import ConsoleOAuth
from shared.protocol.gateway import GatewayConfig, McpGateway
from shared.protocol.toolsets import Toolsets
from shared.tools.catalog import ToolCatalog, gateway_catalog
from shared.tools.invoker import Invoker


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
        from shared.tools.groups import load_catalog  # not in Lambda

        catalog = ToolCatalog(load_catalog())
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
