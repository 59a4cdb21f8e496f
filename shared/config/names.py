"""One names module: table names, env-var keys, function names and output keys.

Imported by the CDK app (infra/), the runtime (shared/, functions/) and the tests, so the three
can never drift apart.
"""

from __future__ import annotations

from typing import Final

SERVICE: Final = "cairn"

# Tool groups: each becomes one Lambda function in AWS; locally all run in-process.
GROUP_MEMORY: Final = "memory"
GROUP_SEARCH: Final = "search"
GROUP_HANDOFFS: Final = "handoffs"
GROUP_SYNC: Final = "sync"
GROUP_ORCHESTRATOR: Final = "orchestrator"
GROUP_SESSIONS: Final = "sessions"
GROUP_KNOWLEDGE: Final = "knowledge"
GROUP_WORKFLOWS: Final = "workflows"
TOOL_GROUPS: Final[tuple[str, ...]] = (
    GROUP_MEMORY,
    GROUP_SEARCH,
    GROUP_HANDOFFS,
    GROUP_SYNC,
    GROUP_ORCHESTRATOR,
    GROUP_SESSIONS,
    GROUP_KNOWLEDGE,
    GROUP_WORKFLOWS,
)
# Prefixes of the one artifacts/inbox bucket, each granted only to the group that owns it.
BUCKET_PREFIX_INBOX: Final = "inbox"
BUCKET_PREFIX_ARTIFACTS: Final = "artifacts"
# Workers: functions no tool call reaches (fed by streams, queues or schedules).
WORKER_CURATOR: Final = "curator"
# Turns each step the state machines reach (a queue message with the callback token) into a task.
WORKER_WORKFLOW_DISPATCHER: Final = "workflow_dispatcher"
# Turns newly ingested events into knowledge nodes (seed 003), fed by a FIFO queue.
WORKER_KNOWLEDGE_ENRICHER: Final = "knowledge_enricher"
# Runs one team's scheduled sync (connectors, pruning, index rebuild) when its schedule fires.
WORKER_SYNC_RUNNER: Final = "sync_runner"
# Forwards the domain events the coordination table's stream reports onto the event bus.
WORKER_EVENT_PUBLISHER: Final = "event_publisher"
WORKERS: Final[tuple[str, ...]] = (
    WORKER_CURATOR,
    WORKER_SYNC_RUNNER,
    WORKER_EVENT_PUBLISHER,
    WORKER_WORKFLOW_DISPATCHER,
    WORKER_KNOWLEDGE_ENRICHER,
)

# Logical table ids (the physical names are derived per environment by the stack).
TABLE_TOKENS: Final = "tokens"
TABLE_MEMORIES: Final = "memories"
TABLE_DOCUMENTS: Final = "documents"
TABLE_HANDOFFS: Final = "handoffs"
TABLE_SYNC: Final = "sync"
TABLE_COORDINATION: Final = "coordination"
TABLE_KNOWLEDGE: Final = "knowledge"
TABLE_SESSIONS: Final = "sessions"


class Env:
    """Environment-variable keys read once at cold start by `shared.config.settings`."""

    ENVIRONMENT: Final = "CAIRN_ENV"
    REGION: Final = "AWS_REGION"
    DEFAULT_REGION: Final = "AWS_DEFAULT_REGION"  # the SDK's fallback when AWS_REGION is unset
    TOKENS_TABLE: Final = "CAIRN_TOKENS_TABLE"
    MEMORIES_TABLE: Final = "CAIRN_MEMORIES_TABLE"
    DOCUMENTS_TABLE: Final = "CAIRN_DOCUMENTS_TABLE"
    HANDOFFS_TABLE: Final = "CAIRN_HANDOFFS_TABLE"
    SYNC_TABLE: Final = "CAIRN_SYNC_TABLE"
    COORDINATION_TABLE: Final = "CAIRN_COORDINATION_TABLE"
    KNOWLEDGE_TABLE: Final = "CAIRN_KNOWLEDGE_TABLE"
    SESSIONS_TABLE: Final = "CAIRN_SESSIONS_TABLE"
    # A JSON model catalog replacing the shipped one (hecate_set_model / moros_set_model).
    MODEL_CATALOG: Final = "CAIRN_MODEL_CATALOG"
    ARTIFACTS_BUCKET: Final = "CAIRN_ARTIFACTS_BUCKET"
    TOKEN_PEPPER_SECRET_ARN: Final = "CAIRN_TOKEN_PEPPER_SECRET_ARN"
    TOKEN_PEPPER: Final = "CAIRN_TOKEN_PEPPER"
    # Behind CloudFront (api=cloudfront): the secret holding the header value CloudFront adds to
    # every origin request; the gateway refuses requests without it (docs/infra/api-and-auth.md).
    ORIGIN_SECRET_ARN: Final = "CAIRN_ORIGIN_SECRET_ARN"
    SEARCH_ENDPOINT: Final = "CAIRN_SEARCH_ENDPOINT"
    SEARCH_INDEX: Final = "CAIRN_SEARCH_INDEX"
    SEARCH_SERVICE: Final = "CAIRN_SEARCH_SERVICE"
    EMBEDDING_MODEL_ID: Final = "CAIRN_EMBEDDING_MODEL_ID"
    EMBEDDING_DIMENSIONS: Final = "CAIRN_EMBEDDING_DIMENSIONS"
    # `bedrock:<model id>` in AWS (shared.search.wiring.build_reranker reads it).
    RERANKER: Final = "CAIRN_RERANKER"
    PUBLIC_URL: Final = "CAIRN_PUBLIC_URL"
    # The optional OAuth authorization server (shared.auth.oauth): its issuer URL, the audience
    # its access tokens must carry (default: the public resource URL), its JWKS URL (default:
    # <issuer>/.well-known/jwks.json) and the per-subject requests per minute.
    OAUTH_ISSUER: Final = "CAIRN_OAUTH_ISSUER"
    OAUTH_AUDIENCE: Final = "CAIRN_OAUTH_AUDIENCE"
    OAUTH_JWKS_URL: Final = "CAIRN_OAUTH_JWKS_URL"
    OAUTH_RATE_LIMIT: Final = "CAIRN_OAUTH_RATE_LIMIT"
    # The web console's sign-in through it: the hosted login's base URL and the client id.
    OAUTH_LOGIN_URL: Final = "CAIRN_OAUTH_LOGIN_URL"
    OAUTH_CLIENT_ID: Final = "CAIRN_OAUTH_CLIENT_ID"
    # Seconds a process trusts a verified team token before reading it again (the revocation
    # bound; 0: read on every request).
    TOKEN_CACHE_SECONDS: Final = "CAIRN_TOKEN_CACHE_SECONDS"
    ALLOWED_ORIGINS: Final = "CAIRN_ALLOWED_ORIGINS"
    STACK_NAME: Final = "CAIRN_STACK_NAME"
    CURATION: Final = "CAIRN_CURATION"
    # A Bedrock model the curator asks whether two memories contradict (unset: rules only).
    CURATOR_MODEL_ID: Final = "CAIRN_CURATOR_MODEL_ID"
    COST_BUDGET_USD: Final = "CAIRN_COST_BUDGET_USD"
    # The stack's domain event bus (read by the event publisher's handler only).
    EVENT_BUS_NAME: Final = "CAIRN_EVENT_BUS_NAME"
    # Workflows on Step Functions: the dispatch queue the compiled machines send steps to, the
    # role they run under, their name prefix and log group.
    WORKFLOW_QUEUE_URL: Final = "CAIRN_WORKFLOW_QUEUE_URL"
    WORKFLOW_ROLE_ARN: Final = "CAIRN_WORKFLOW_ROLE_ARN"
    WORKFLOW_MACHINE_PREFIX: Final = "CAIRN_WORKFLOW_MACHINE_PREFIX"
    WORKFLOW_LOG_GROUP_ARN: Final = "CAIRN_WORKFLOW_LOG_GROUP_ARN"
    # Schedule triggers: the EventBridge Scheduler group and the role its schedules run under.
    WORKFLOW_SCHEDULE_GROUP: Final = "CAIRN_WORKFLOW_SCHEDULE_GROUP"
    WORKFLOW_SCHEDULER_ROLE_ARN: Final = "CAIRN_WORKFLOW_SCHEDULER_ROLE_ARN"
    # Sync: the runner a large team's sync starts asynchronously, and the schedule group,
    # role and runner the sync tools manage a team's schedule with.
    SYNC_RUNNER_ARN: Final = "CAIRN_SYNC_RUNNER_ARN"
    SYNC_SCHEDULE_GROUP: Final = "CAIRN_SYNC_SCHEDULE_GROUP"
    SYNC_SCHEDULER_ROLE_ARN: Final = "CAIRN_SYNC_SCHEDULER_ROLE_ARN"
    STORAGE: Final = "CAIRN_STORAGE"  # dynamodb (AWS) | sqlite (the embedded default)
    # Local embedded default.
    PORT: Final = "CAIRN_PORT"
    THREADS: Final = "CAIRN_THREADS"  # worker threads for tool calls (`cairn serve --threads`)
    DATA_DIR: Final = "CAIRN_DATA_DIR"
    DEV_TOKEN: Final = "CAIRN_DEV_TOKEN"
    # Read by Powertools itself (Logger, Metrics) in every deployed function.
    POWERTOOLS_SERVICE_NAME: Final = "POWERTOOLS_SERVICE_NAME"
    POWERTOOLS_METRICS_NAMESPACE: Final = "POWERTOOLS_METRICS_NAMESPACE"
    LOG_LEVEL: Final = "LOG_LEVEL"

    @staticmethod
    def group_function(group: str) -> str:
        """Env key that holds the deployed function name of a tool group.

        >>> Env.group_function("memory")
        'CAIRN_FUNCTION_MEMORY'
        """
        return f"CAIRN_FUNCTION_{group.upper()}"


class Outputs:
    """CloudFormation output keys: stable, so pipelines and the CLI can read them."""

    MCP_URL: Final = "McpUrl"
    # Behind CloudFront only: the origin it forwards to (the smoke test's bypass check).
    ORIGIN_URL: Final = "OriginUrl"
    TOKENS_TABLE: Final = "TokensTableName"
    MEMORIES_TABLE: Final = "MemoriesTableName"
    DOCUMENTS_TABLE: Final = "DocumentsTableName"
    HANDOFFS_TABLE: Final = "HandoffsTableName"
    SYNC_TABLE: Final = "SyncTableName"
    COORDINATION_TABLE: Final = "CoordinationTableName"
    KNOWLEDGE_TABLE: Final = "KnowledgeTableName"
    SESSIONS_TABLE: Final = "SessionsTableName"
    ARTIFACTS_BUCKET: Final = "ArtifactsBucketName"
    SEARCH_ENDPOINT: Final = "SearchEndpoint"
    ALARM_TOPIC: Final = "AlarmTopicArn"
    TOKEN_PEPPER_SECRET: Final = "TokenPepperSecretArn"
    WORKFLOW_QUEUE: Final = "WorkflowQueueUrl"
    SYNC_SCHEDULE_GROUP: Final = "SyncScheduleGroupName"
    SYNC_RUNNER_ARN: Final = "SyncRunnerArn"
    SYNC_SCHEDULER_ROLE_ARN: Final = "SyncSchedulerRoleArn"
    # What a team's erasure reaches beyond the tables: its workflow schedules and its entry in
    # the GitHub webhook secrets.
    WORKFLOW_SCHEDULE_GROUP: Final = "WorkflowScheduleGroupName"
    # What a workflow schedule invokes, and under which role: an import re-creates them.
    WORKFLOWS_FUNCTION_ARN: Final = "WorkflowsFunctionArn"
    WORKFLOW_SCHEDULER_ROLE_ARN: Final = "WorkflowSchedulerRoleArn"
    WEBHOOK_SECRETS: Final = "GithubWebhookSecretsArn"
    # The domain event bus: where a team's rules (Slack, SQS, …) subscribe.
    EVENT_BUS_NAME: Final = "EventBusName"
    EVENT_BUS_ARN: Final = "EventBusArn"
    # With `-c oauth=true`: what an MCP client's OAuth settings need.
    OAUTH_ISSUER: Final = "OAuthIssuer"
    OAUTH_CLIENT_ID: Final = "OAuthClientId"
    OAUTH_LOGIN_DOMAIN: Final = "OAuthLoginDomain"


# Per table: the env key that carries its physical name and the stack output that publishes it.
TABLE_ENV: Final[dict[str, str]] = {
    TABLE_TOKENS: Env.TOKENS_TABLE,
    TABLE_MEMORIES: Env.MEMORIES_TABLE,
    TABLE_DOCUMENTS: Env.DOCUMENTS_TABLE,
    TABLE_HANDOFFS: Env.HANDOFFS_TABLE,
    TABLE_SYNC: Env.SYNC_TABLE,
    TABLE_COORDINATION: Env.COORDINATION_TABLE,
    TABLE_SESSIONS: Env.SESSIONS_TABLE,
    TABLE_KNOWLEDGE: Env.KNOWLEDGE_TABLE,
}
TABLE_OUTPUTS: Final[dict[str, str]] = {
    TABLE_TOKENS: Outputs.TOKENS_TABLE,
    TABLE_MEMORIES: Outputs.MEMORIES_TABLE,
    TABLE_DOCUMENTS: Outputs.DOCUMENTS_TABLE,
    TABLE_HANDOFFS: Outputs.HANDOFFS_TABLE,
    TABLE_SYNC: Outputs.SYNC_TABLE,
    TABLE_COORDINATION: Outputs.COORDINATION_TABLE,
    TABLE_SESSIONS: Outputs.SESSIONS_TABLE,
    TABLE_KNOWLEDGE: Outputs.KNOWLEDGE_TABLE,
}

# dev: one stack per developer; staging: the pipeline's rehearsal of prod (smoke-tested before
# prod deploys); prod.
DEPLOY_ENVIRONMENTS: Final[tuple[str, ...]] = ("dev", "staging", "prod")


def stack_name(environment: str, developer: str | None = None) -> str:
    """The CloudFormation stack of an environment: one per developer in dev, else one.

    >>> stack_name("prod"), stack_name("staging"), stack_name("dev", "alice")
    ('cairn-prod', 'cairn-staging', 'cairn-dev-alice')
    """
    if environment != "dev" or not developer:
        return f"{SERVICE}-{environment}"
    return f"{SERVICE}-{environment}-{developer}"


DEFAULT_PORT: Final = 8765
LOCAL_TEAM: Final = "local"
# TTL attribute used by every table (epoch seconds). DynamoDB TTL is lazy, so reads check it too.
TTL_ATTRIBUTE: Final = "expires_at_epoch"
