"""Typed configuration, validated once at cold start.

Services never read `os.environ`; entry points build a `Settings` and pass values down.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from shared.config import names
from shared.config.names import Env
from shared.config.tables import ALL_TABLES, physical_name


class Settings(BaseModel):
    """Runtime configuration shared by the gateway, the group functions and local mode."""

    model_config = ConfigDict(frozen=True)

    environment: str = "local"
    region: str = "us-east-1"
    tables: Mapping[str, str] = Field(
        default_factory=lambda: {spec.logical_id: physical_name(spec) for spec in ALL_TABLES}
    )
    artifacts_bucket: str = "cairn-artifacts"
    token_pepper: str | None = None
    token_pepper_secret_arn: str | None = None
    # The secret whose value CloudFront sends as the origin header (unset: no CloudFront front).
    origin_secret_arn: str | None = None
    # How long a process trusts a team token it verified before reading it again: a revocation made
    # elsewhere takes effect within this bound (docs/infra/api-and-auth.md, "Auth per request").
    token_cache_seconds: float = Field(default=60.0, ge=0, le=3600)
    group_functions: Mapping[str, str] = Field(default_factory=dict)
    public_url: str | None = None
    # The optional OAuth authorization server (see `shared.auth.oauth`); unset: team tokens only.
    oauth_issuer: str | None = None
    oauth_audience: str | None = None
    oauth_jwks_url: str | None = None
    oauth_rate_limit_per_minute: int = 600
    oauth_login_url: str | None = None
    oauth_client_id: str | None = None
    allowed_origins: tuple[str, ...] = ()
    search_endpoint: str | None = None
    search_index: str = "cairn-chunks"
    search_service: str = "aoss"
    embedding_model_id: str = "amazon.titan-embed-text-v2:0"
    # Titan v2 in AWS (256, 512 or 1024); the embedded default uses MiniLM's own 384.
    embedding_dimensions: int = 1024
    data_dir: Path | None = None
    # Where remembered memories are curated: right after the write ("inline": local mode and
    # tests) or by the curator function on the memories table's stream ("stream": AWS).
    curation: Literal["inline", "stream"] = "inline"
    # The Bedrock model (Converse) that judges contradictions for the curator; None: its rules.
    curator_model_id: str | None = None
    # Where the stores live: DynamoDB (AWS, and the functional tests on moto) or the embedded
    # database in `data_dir` (`make serve`).
    storage: Literal["dynamodb", "sqlite"] = "dynamodb"
    # The team's spending limit per cost.budget period (USD); none configured → spend only.
    cost_budget_usd: float | None = None
    # The model catalog of hecate_set_model / moros_set_model: "bedrock" (the region's
    # foundation models, set in AWS), a path to a JSON catalog, or None (the one shipped).
    model_catalog: str | None = None
    # Workflows on Step Functions (AWS): set by the stack; unset → the workflow service drives
    # executions itself (the embedded default and the tests).
    workflow_queue_url: str | None = None
    workflow_role_arn: str | None = None
    workflow_machine_prefix: str = "cairn"
    workflow_log_group_arn: str | None = None
    workflow_schedule_group: str | None = None
    workflow_scheduler_role_arn: str | None = None
    # Sync in AWS: the runner a large team's `sync`/`embeddings_build` invokes asynchronously
    # (unset: a worker thread of this process runs it), and the schedule group and role the
    # sync tools put a team's schedule in (unset: the database's schedules, fired locally).
    sync_runner_arn: str | None = None
    sync_schedule_group: str | None = None
    sync_scheduler_role_arn: str | None = None

    @property
    def is_local(self) -> bool:
        """True for the embedded default (SQLite stores + embedded index)."""
        return self.environment == "local"

    def table(self, logical_id: str) -> str:
        """Physical name of a table by its logical id (see `shared.config.names`)."""
        return self.tables[logical_id]

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Build settings from environment variables (the Lambda and CLI path)."""
        env = os.environ if environ is None else environ
        defaults = cls()
        tables = dict(defaults.tables)
        for logical_id, key in names.TABLE_ENV.items():
            if key in env:
                tables[logical_id] = env[key]
        functions = {
            group: env[Env.group_function(group)]
            for group in names.TOOL_GROUPS
            if Env.group_function(group) in env
        }
        origins = tuple(o.strip() for o in env.get(Env.ALLOWED_ORIGINS, "").split(",") if o.strip())
        data_dir = env.get(Env.DATA_DIR)
        return cls(
            environment=env.get(Env.ENVIRONMENT, "local"),
            region=env.get(Env.REGION, env.get(Env.DEFAULT_REGION, "us-east-1")),
            tables=tables,
            artifacts_bucket=env.get(Env.ARTIFACTS_BUCKET, defaults.artifacts_bucket),
            token_pepper=env.get(Env.TOKEN_PEPPER),
            token_pepper_secret_arn=env.get(Env.TOKEN_PEPPER_SECRET_ARN),
            origin_secret_arn=env.get(Env.ORIGIN_SECRET_ARN),
            token_cache_seconds=float(
                env.get(Env.TOKEN_CACHE_SECONDS) or defaults.token_cache_seconds
            ),
            group_functions=functions,
            public_url=env.get(Env.PUBLIC_URL),
            oauth_issuer=env.get(Env.OAUTH_ISSUER) or None,
            oauth_audience=env.get(Env.OAUTH_AUDIENCE) or None,
            oauth_jwks_url=env.get(Env.OAUTH_JWKS_URL) or None,
            oauth_login_url=env.get(Env.OAUTH_LOGIN_URL) or None,
            oauth_client_id=env.get(Env.OAUTH_CLIENT_ID) or None,
            oauth_rate_limit_per_minute=int(
                env.get(Env.OAUTH_RATE_LIMIT) or defaults.oauth_rate_limit_per_minute
            ),
            allowed_origins=origins,
            search_endpoint=env.get(Env.SEARCH_ENDPOINT),
            search_index=env.get(Env.SEARCH_INDEX, defaults.search_index),
            search_service=env.get(Env.SEARCH_SERVICE, defaults.search_service),
            embedding_model_id=env.get(Env.EMBEDDING_MODEL_ID, defaults.embedding_model_id),
            embedding_dimensions=int(
                env.get(Env.EMBEDDING_DIMENSIONS, str(defaults.embedding_dimensions))
            ),
            data_dir=Path(data_dir) if data_dir else None,
            curation=env.get(Env.CURATION, defaults.curation),
            curator_model_id=env.get(Env.CURATOR_MODEL_ID) or None,
            storage=env.get(Env.STORAGE, defaults.storage),
            cost_budget_usd=float(env[Env.COST_BUDGET_USD])
            if env.get(Env.COST_BUDGET_USD)
            else None,
            model_catalog=env.get(Env.MODEL_CATALOG) or None,
            sync_runner_arn=env.get(Env.SYNC_RUNNER_ARN) or None,
            sync_schedule_group=env.get(Env.SYNC_SCHEDULE_GROUP) or None,
            sync_scheduler_role_arn=env.get(Env.SYNC_SCHEDULER_ROLE_ARN) or None,
            workflow_queue_url=env.get(Env.WORKFLOW_QUEUE_URL) or None,
            workflow_role_arn=env.get(Env.WORKFLOW_ROLE_ARN) or None,
            workflow_machine_prefix=env.get(
                Env.WORKFLOW_MACHINE_PREFIX, defaults.workflow_machine_prefix
            ),
            workflow_log_group_arn=env.get(Env.WORKFLOW_LOG_GROUP_ARN) or None,
            workflow_schedule_group=env.get(Env.WORKFLOW_SCHEDULE_GROUP) or None,
            workflow_scheduler_role_arn=env.get(Env.WORKFLOW_SCHEDULER_ROLE_ARN) or None,
        )
