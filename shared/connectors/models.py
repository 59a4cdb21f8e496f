"""Connectors a team registers for its syncs: the record kept per team (name, kind, settings —
never a secret), what one sync of it left behind (status), and what a source lists.

A connector's `name` is also the `source` of the documents it brings in, so `search {"source":
NAME}` finds them and `sync {"source": NAME}` runs it.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

ConnectorKind = Literal["git", "folder", "obsidian", "s3", "web"]
KINDS: tuple[str, ...] = ("git", "folder", "obsidian", "s3", "web")
# Seed 000's source names for its two local connectors, accepted as kinds.
KIND_ALIASES: dict[str, str] = {"local_files": "folder"}
# Sources that are not connectors: the inbox connector every team has, and memories.
RESERVED_NAMES = frozenset({"inbox", "memory", "references"})
NAME_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,39}$"

# Bounds every kind applies unless its settings say less (docs/sync.md, "Connectors").
DEFAULT_MAX_FILE_BYTES = 2 * 1024 * 1024
DEFAULT_MAX_FILES = 5_000
HARD_MAX_FILE_BYTES = 20 * 1024 * 1024
HARD_MAX_FILES = 50_000

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
_SECRET_ARN = re.compile(r"^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:[^\s]+$")


class ConnectorError(Exception):
    """A connector could not be synced; the message names the cause and never a secret."""


class _Settings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    globs: list[str] = Field(
        default_factory=list,
        max_length=50,
        description="Paths to include, e.g. docs/**/*.md (default: every file).",
    )
    max_file_bytes: int = Field(default=DEFAULT_MAX_FILE_BYTES, ge=1, le=HARD_MAX_FILE_BYTES)
    max_files: int = Field(default=DEFAULT_MAX_FILES, ge=1, le=HARD_MAX_FILES)


class _Credentials(BaseModel):
    """Where a token comes from: an environment variable (local mode) or a Secrets Manager
    secret (AWS). The value itself is never stored."""

    token_env: str | None = Field(default=None, description="Environment variable with a token.")
    token_secret_arn: str | None = Field(default=None, description="Secrets Manager ARN.")

    @field_validator("token_env")
    @classmethod
    def _env_name(cls, value: str | None) -> str | None:
        if value is not None and not _ENV_NAME.match(value):
            raise ValueError("must be an environment variable's name, e.g. DOCS_GIT_TOKEN")
        return value

    @field_validator("token_secret_arn")
    @classmethod
    def _arn(cls, value: str | None) -> str | None:
        if value is not None and not _SECRET_ARN.match(value):
            raise ValueError("must be a Secrets Manager secret ARN (arn:aws:secretsmanager:...)")
        return value


def _refuse_userinfo(url: str) -> str:
    parts = urlsplit(url)
    if parts.username or parts.password:
        # Said without the URL: it carries a credential.
        raise ValueError(
            "must not carry a user name or token; give the token with token_env (an "
            "environment variable) or token_secret_arn (Secrets Manager)"
        )
    return url


class GitSettings(_Settings, _Credentials):
    kind: Literal["git"] = "git"
    url: str = Field(min_length=1, max_length=2000)
    branch: str = Field(default="main", min_length=1, max_length=200, pattern=r"^[^\s~^:?*\[\\]+$")
    username: str = Field(default="x-access-token", max_length=200)

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme not in ("https", "http", "file", "ssh", "git"):
            raise ValueError("must be an https://, ssh://, git:// or file:// git URL")
        if parts.scheme == "ssh" and not parts.password:
            return value  # ssh://git@host/...: a user name there is a login, not a secret
        return _refuse_userinfo(value)

    @model_validator(mode="after")
    def _ssh_keys(self) -> GitSettings:
        if urlsplit(self.url).scheme == "ssh" and (self.token_env or self.token_secret_arn):
            raise ValueError(
                "an ssh:// URL signs in with the machine's ssh keys; token_env and "
                "token_secret_arn are for https:// URLs"
            )
        return self


class FolderSettings(_Settings):
    kind: Literal["folder", "obsidian"] = "folder"
    path: str = Field(min_length=1, max_length=4000)


class S3Settings(_Settings):
    kind: Literal["s3"] = "s3"
    bucket: str = Field(min_length=3, max_length=63, pattern=r"^[a-z0-9][a-z0-9.-]+[a-z0-9]$")
    prefix: str = Field(default="", max_length=1000)


class WebSettings(_Settings):
    kind: Literal["web"] = "web"
    urls: list[str] = Field(default_factory=list, max_length=1000)
    sitemap: str | None = Field(default=None, max_length=2000)
    allowed_hosts: list[str] = Field(default_factory=list, max_length=50)
    # Local testing only: lets the connector read private and loopback addresses.
    allow_private: bool = False
    max_pages: int = Field(default=200, ge=1, le=5_000)
    max_total_bytes: int = Field(default=50 * 1024 * 1024, ge=1, le=500 * 1024 * 1024)
    max_redirects: int = Field(default=5, ge=0, le=10)
    max_seconds: float = Field(default=300.0, gt=0, le=840)

    @model_validator(mode="after")
    def _something_to_read(self) -> WebSettings:
        if not self.urls and not self.sitemap:
            raise ValueError("give `urls` or a `sitemap` to read")
        for url in [*self.urls, *([self.sitemap] if self.sitemap else [])]:
            if urlsplit(url).scheme not in ("http", "https"):
                raise ValueError(f"{url!r} is not an http(s) URL")
            _refuse_userinfo(url)
        return self


ConnectorSettings = Annotated[
    GitSettings | FolderSettings | S3Settings | WebSettings, Field(discriminator="kind")
]


def parse_settings(kind: str, config: dict[str, Any]) -> ConnectorSettings:
    """A kind's settings from its plain config, validated (pydantic's errors name the field)."""
    from pydantic import TypeAdapter

    canonical = KIND_ALIASES.get(kind, kind)
    adapter: TypeAdapter[ConnectorSettings] = TypeAdapter(ConnectorSettings)
    return adapter.validate_python({**config, "kind": canonical})


class ConnectorStatus(BaseModel):
    """What the connector's last sync left: when, its counts, its error (if it failed), and
    its cursor (a git commit, …: what makes the next sync of an unchanged source a no-op)."""

    last_sync: datetime | None = None
    last_success: datetime | None = None
    last_error: str | None = None
    counts: dict[str, int] = Field(default_factory=dict)
    cursor: str | None = None


class ConnectorRecord(BaseModel):
    """One connector of a team."""

    name: str = Field(pattern=NAME_PATTERN)
    kind: ConnectorKind
    settings: ConnectorSettings
    created_at: datetime
    created_by: str = "cli"
    status: ConnectorStatus = Field(default_factory=ConnectorStatus)

    def public(self) -> dict[str, Any]:
        """The record as `cairn connectors list` shows it (no cursor: an internal detail)."""
        body = self.model_dump(mode="json", exclude={"status": {"cursor"}})
        body["settings"].pop("kind", None)
        return body


class SourceItem(BaseModel):
    """One file (or page, or object) a source lists."""

    model_config = ConfigDict(frozen=True)

    id: str  # its path within the source: the document's source_id
    version: str | None  # a content hash or validator; None: only reading it tells
    size: int | None = None
    uri: str | None = None


class Fetched(BaseModel):
    """What reading an item gave: its bytes (None when unchanged since `known`), its version,
    and a title when the source knows one (a web page's <title>)."""

    data: bytes | None
    version: str | None
    title: str | None = None
    text: str | None = None  # already text (a web page's extracted text)
    # Not read this time (a page that failed, a bound reached): counted under this reason;
    # what an earlier sync indexed of it stays.
    skipped: str | None = None


class Listing(BaseModel):
    """What a source holds now, and the cursor to remember once it is synced."""

    items: list[SourceItem]
    cursor: str | None = None
    skipped: dict[str, int] = Field(default_factory=dict)


def safe_url(url: str) -> str:
    """`url` without any user name, password, query or fragment: fit for a message."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return f"{parts.scheme}://{host}{parts.path}"
