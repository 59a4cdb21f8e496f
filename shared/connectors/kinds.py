"""Opening a registered connector as a `Source`: the one place that knows every kind."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from shared.connectors.models import (
    ConnectorError,
    ConnectorRecord,
    FolderSettings,
    GitSettings,
    S3Settings,
    WebSettings,
)
from shared.connectors.ports import Source


class OpenSource(Source, Protocol):
    def close(self) -> None: ...


@dataclass(frozen=True)
class SourceContext:
    """What opening a source needs from the deployment: where caches live, whether this
    machine's folders are reachable (local mode), how a secret ARN is read, and an S3 client
    factory (the sync runner's role in AWS)."""

    cache_dir: Path
    local: bool
    read_secret: Callable[[str], str] | None = None
    s3_client: Callable[[], object] | None = None


def _token(settings: GitSettings, context: SourceContext) -> str | None:
    if settings.token_secret_arn:
        if context.read_secret is None:
            raise ConnectorError("token_secret_arn needs Secrets Manager (a deployed stack)")
        try:
            return context.read_secret(settings.token_secret_arn)
        except Exception as exc:
            raise ConnectorError(f"cannot read the token's secret ({type(exc).__name__})") from None
    if settings.token_env:
        value = os.environ.get(settings.token_env)
        if not value:
            raise ConnectorError(f"the environment variable {settings.token_env} is not set")
        return value
    return None


def open_source(team: str, record: ConnectorRecord, context: SourceContext) -> OpenSource:
    """The record's source, ready to list; `ConnectorError` when it cannot be (a folder kind
    outside local mode, a token that cannot be read)."""
    settings = record.settings
    if isinstance(settings, GitSettings):
        from shared.connectors.git import GitSource

        cache = context.cache_dir / "git" / team / f"{record.name}.git"
        return GitSource(settings, cache, _token(settings, context))
    if isinstance(settings, FolderSettings):
        if not context.local:
            raise ConnectorError(
                f"a {record.kind} connector reads a folder of this machine: local mode only "
                "(in AWS use git or s3)"
            )
        from shared.connectors.folder import FolderSource

        return FolderSource(settings)
    if isinstance(settings, S3Settings):
        from shared.connectors.s3 import S3Source

        if context.s3_client is None:
            raise ConnectorError("no S3 client configured")
        return S3Source(settings, context.s3_client())
    if isinstance(settings, WebSettings):
        from shared.connectors.web import WebSource

        return WebSource(settings, local=context.local)
    raise ConnectorError(f"unknown connector kind {record.kind!r}")
