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
from shared.storage.backends import Adapters


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


TOKEN_STORE = Adapters[TokenStore].named(
    sqlite="shared.auth.adapters.sqlite:SqliteTokenStore",
    dynamodb="shared.auth.adapters.dynamodb:DynamoTokenStore",
    table=names.TABLE_TOKENS,
)


def build_token_store() -> TokenStore:
    """The token store of the process's storage backend."""
    return runtime.backend().build(TOKEN_STORE)


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
