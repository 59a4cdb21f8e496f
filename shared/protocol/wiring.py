"""Builds the gateway from settings: the one place local mode and Lambda share."""

from __future__ import annotations

from collections.abc import Callable

import boto3

from shared import runtime
from shared.auth.adapters.dynamodb import DynamoTokenStore
from shared.auth.ports import TokenStore
from shared.auth.service import TokenService
from shared.config import names
from shared.config.settings import Settings
from shared.protocol.gateway import GatewayConfig, McpGateway
from shared.tools.groups import load_catalog
from shared.tools.invoker import Invoker


class ConfigurationError(Exception):
    """Settings are missing something the process cannot start without."""


def resolve_pepper(settings: Settings) -> bytes:
    """The HMAC key of token hashes: from settings locally, from Secrets Manager in AWS."""
    if settings.token_pepper:
        return settings.token_pepper.encode()
    if settings.token_pepper_secret_arn:
        client = boto3.client("secretsmanager", region_name=settings.region)
        value: str = client.get_secret_value(SecretId=settings.token_pepper_secret_arn)[
            "SecretString"
        ]
        return value.encode()
    raise ConfigurationError(
        f"set {names.Env.TOKEN_PEPPER} or {names.Env.TOKEN_PEPPER_SECRET_ARN} for token hashing"
    )


def build_token_service(
    settings: Settings, wrap_store: Callable[[TokenStore], TokenStore] | None = None
) -> TokenService:
    """Token service on the tokens table; local mode wraps the store to serialize its writes."""
    store: TokenStore = DynamoTokenStore(runtime.table(names.TABLE_TOKENS))
    return TokenService(wrap_store(store) if wrap_store else store, resolve_pepper(settings))


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
