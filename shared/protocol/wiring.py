"""Builds the gateway from settings: the one place local mode and Lambda share.

The token service it needs comes from `shared.auth.wiring.build_token_service`.
"""

from __future__ import annotations

from shared.auth.service import TokenService
from shared.config.settings import Settings
from shared.protocol.gateway import GatewayConfig, McpGateway
from shared.tools.groups import load_catalog
from shared.tools.invoker import Invoker


def build_gateway(
    settings: Settings, invoker: Invoker, tokens: TokenService, *, local: bool = False
) -> McpGateway:
    """The MCP gateway over every group's catalog; `local` admits localhost origins and hosts."""
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
