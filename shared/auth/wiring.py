"""Builds the token store and service on the configured storage (the one place the token
adapter is chosen)."""

from __future__ import annotations

from collections.abc import Callable

import boto3

from shared import runtime
from shared.auth.ports import TokenStore
from shared.auth.service import TokenService
from shared.config import names
from shared.config.settings import Settings


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


def build_token_store() -> TokenStore:
    """The token store of `runtime.settings().storage`."""
    if runtime.settings().storage == "sqlite":
        from shared.auth.adapters.sqlite import SqliteTokenStore

        return SqliteTokenStore(runtime.database())
    from shared.auth.adapters.dynamodb import DynamoTokenStore

    return DynamoTokenStore(runtime.table(names.TABLE_TOKENS))


def build_token_service(
    settings: Settings, wrap_store: Callable[[TokenStore], TokenStore] | None = None
) -> TokenService:
    """Token service on the configured store; local mode wraps the store to serialize its
    writes."""
    store = build_token_store()
    return TokenService(
        wrap_store(store) if wrap_store else store,
        resolve_pepper(settings),
        cache_seconds=settings.token_cache_seconds,
    )
