"""Builds the gateway from settings: the one place local mode and Lambda share."""

from __future__ import annotations

from shared.auth.service import TokenService

# The token builders live with the auth group; re-exported for the callers that import them here.
from shared.auth.wiring import ConfigurationError, build_token_service, resolve_pepper
from shared.config.settings import Settings
from shared.protocol.gateway import GatewayConfig, McpGateway
from shared.tools.groups import load_catalog
from shared.tools.invoker import Invoker

__all__ = [
    "ConfigurationError",
    "build_gateway",
    "build_token_service",
    "resolve_pepper",
]


def build_gateway(
    settings: Settings, invoker: Invoker, tokens: TokenService, *, local: bool = False
) -> McpGateway:
    return McpGateway(
        catalog=load_catalog(),
        invoker=invoker,
        tokens=tokens,
        config=GatewayConfig(
            public_url=settings.public_url,
            allowed_origins=settings.allowed_origins,
            allow_localhost_origins=local,
            loopback_hosts_only=local,
        ),
    )
