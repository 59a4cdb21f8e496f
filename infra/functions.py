"""Functions: the gateway, one function per tool group and the workers, each with its own
least-privilege role.

Adding a tool group: name it in `shared.config.names.TOOL_GROUPS`, write
`functions/<group>/handler.py`, and say what it reaches in `GROUP_ACCESS` below.

Workers (`WORKER_ACCESS`) are functions no tool call reaches: the gateway may not invoke them,
and what triggers them (the curator's stream mapping) is wired by `infra.workers`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from aws_cdk import Annotations, Duration
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_codedeploy as codedeploy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra.bedrock import allow_invoke_model
from infra.bundling import BUNDLE_RUNTIME, LAMBDA_ARCHITECTURE, RUNTIME_ENVIRONMENT, Bundles
from infra.config import DeployConfig
from infra.data import Data
from infra.nag import XRAY_REASON, XRAY_WILDCARD, arn_token, suppress
from infra.search import Search
from shared.config import names
from shared.config.names import Env
from shared.config.settings import Settings
from shared.config.tables import ALL_TABLES

GATEWAY: Final = "gateway"
CURATOR: Final = names.WORKER_CURATOR
TABLE_SPECS: Final = {spec.logical_id: spec for spec in ALL_TABLES}
# Bedrock Titan Text Embeddings v2 in AWS; its 1,024-dimension default output.
EMBEDDING_MODEL_ID: Final[str] = Settings.model_fields["embedding_model_id"].default
EMBEDDING_DIMENSIONS: Final = 1024


@dataclass(frozen=True)
class GroupAccess:
    """What a tool group's function may reach (tables by logical id)."""

    read_write_tables: tuple[str, ...] = ()
    read_tables: tuple[str, ...] = ()
    search: bool = False  # the search collection (and so the Titan embedding model)
    # Prefixes of the artifacts/inbox bucket whose objects the function reads and writes.
    bucket_prefixes: tuple[str, ...] = ()
    # Mints and revokes team tokens (agent.register): the tokens table (read/write) and the
    # pepper secret that keys their hashes.
    token_admin: bool = False
    # bedrock:ListFoundationModels (the model catalog of the persona set_model tools).
    list_foundation_models: bool = False
    # Appends domain events to the team's event log (shared.domain_events), the outbox the
    # event publisher drains: dynamodb:PutItem on the coordination table and nothing else there.
    domain_events: bool = False


GROUP_ACCESS: Final[Mapping[str, GroupAccess]] = {
    # Memory proposals and the conflicts the curator finds are domain events.
    names.GROUP_MEMORY: GroupAccess(
        read_write_tables=(names.TABLE_MEMORIES,), search=True, domain_events=True
    ),
    names.GROUP_SEARCH: GroupAccess(
        read_tables=(names.TABLE_DOCUMENTS, names.TABLE_MEMORIES), search=True
    ),
    names.GROUP_HANDOFFS: GroupAccess(
        read_write_tables=(names.TABLE_HANDOFFS,), domain_events=True
    ),
    # Sync indexes the inbox into documents, prunes expired memories and keeps its lock/state.
    names.GROUP_SYNC: GroupAccess(
        read_write_tables=(names.TABLE_SYNC, names.TABLE_DOCUMENTS, names.TABLE_MEMORIES),
        search=True,
        bucket_prefixes=(names.BUCKET_PREFIX_INBOX,),
    ),
    # Agents and tasks live in the coordination table; agent.register mints each agent's token
    # and agent.deregister revokes it, so this group also administers tokens.
    # agent.register mints tokens; artifact.put stores bytes under artifacts/.
    names.GROUP_ORCHESTRATOR: GroupAccess(
        read_write_tables=(names.TABLE_COORDINATION,),
        token_admin=True,
        bucket_prefixes=(names.BUCKET_PREFIX_ARTIFACTS,),
    ),
    # Persona sessions; hecate_remember / pins / cleanup summaries write engrams, which are
    # memories (indexed for search and recall like any other); set_model lists Bedrock's models.
    names.GROUP_SESSIONS: GroupAccess(
        read_write_tables=(names.TABLE_SESSIONS, names.TABLE_MEMORIES),
        search=True,
        list_foundation_models=True,
        # Its engrams are memories: conflicts detected around them are domain events.
        domain_events=True,
    ),
    # Workflow records live beside the tasks their steps become (the coordination table).
    names.GROUP_WORKFLOWS: GroupAccess(read_write_tables=(names.TABLE_COORDINATION,)),
    # Seed 003: captured events, nodes, entities, CI runs and lessons (the knowledge table), the
    # search engine for its nodes; the enrichment queue and webhook secret are wired by infra.
    names.GROUP_KNOWLEDGE: GroupAccess(read_write_tables=(names.TABLE_KNOWLEDGE,), search=True),
}

# The curator files what the memory group writes (dedupe, merge, link; re-indexing and
# embedding on the way): exactly the memory group's reach, no more.
WORKER_ACCESS: Final[Mapping[str, GroupAccess]] = {
    CURATOR: GROUP_ACCESS[names.GROUP_MEMORY],
    # The step dispatcher creates tasks and records steps (the coordination table) and answers
    # callbacks (granted by `infra.workflows`): nothing else.
    names.WORKER_WORKFLOW_DISPATCHER: GroupAccess(read_write_tables=(names.TABLE_COORDINATION,)),
    # The sync runner does what the sync group does, for one team per schedule, and reads the
    # tokens table to check the team exists.
    names.WORKER_SYNC_RUNNER: GroupAccess(
        read_write_tables=GROUP_ACCESS[names.GROUP_SYNC].read_write_tables,
        read_tables=(names.TABLE_TOKENS,),
        search=True,
        bucket_prefixes=GROUP_ACCESS[names.GROUP_SYNC].bucket_prefixes,
    ),
    # The enricher turns the knowledge group's events into nodes and indexes them: its reach.
    names.WORKER_KNOWLEDGE_ENRICHER: GroupAccess(
        read_write_tables=(names.TABLE_KNOWLEDGE,), search=True
    ),
    # The event publisher reads the coordination table's stream (granted by its mapping in
    # `infra.events`) and puts events on the bus (granted there too): no table, no bucket.
    names.WORKER_EVENT_PUBLISHER: GroupAccess(),
}

# Powertools Tracer records a handler's response in its X-Ray segment unless this is "false".
# Every function's responses carry team data (memories, documents) and agent.register's reply
# a freshly minted token secret: none of it may be copied into traces, so it is off everywhere.
TRACER_CAPTURE_RESPONSE: Final = "POWERTOOLS_TRACER_CAPTURE_RESPONSE"

# Per tool group, environment beyond its tables and search settings.
GROUP_ENVIRONMENT: Final[Mapping[str, Mapping[str, str]]] = {}
# Every function leaves remembered memories pending for the curator, which the memories table's
# stream feeds: not only the memory group writes memories (sessions, sync and the sync runner
# do too), and inline curation would start a detection thread that Lambda freezes between
# invocations (tests/infra/test_handler_threads.py).
CURATION: Final = "stream"


@dataclass(frozen=True)
class FunctionSpec:
    memory_mb: int
    timeout: Duration


# The time budget: API Gateway gives up at 29 s; the gateway must answer before that (28 s), and
# it waits at most 26 s for a group (functions/gateway/handler.py), which gives up at 24 s. Each
# layer times out inside the one above, so a slow call ends as an MCP error, never a bare 504.
GATEWAY_SPEC: Final = FunctionSpec(memory_mb=1024, timeout=Duration.seconds(28))
GROUP_SPEC: Final = FunctionSpec(memory_mb=1024, timeout=Duration.seconds(24))
# A worker handles a batch of records (the curator: up to 10 memories, a few embeddings and
# index queries each) with no caller waiting on it.
WORKER_SPEC: Final = FunctionSpec(memory_mb=1024, timeout=Duration.minutes(1))
# A scheduled sync may index a whole team's documents: Lambda's longest run, no caller waiting.
WORKER_SPECS: Final[Mapping[str, FunctionSpec]] = {
    names.WORKER_SYNC_RUNNER: FunctionSpec(memory_mb=2048, timeout=Duration.minutes(15)),
}


class Functions(Construct):
    """`gateway` (with its SnapStart alias `gateway_alias`), `groups[name]` and
    `workers[name]`."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: DeployConfig,
        data: Data,
        search: Search,
    ) -> None:
        super().__init__(scope, construct_id)
        self._config = config
        self._data = data
        self._search = search
        # One bundle per function: only the packages it imports (infra/bundling.py).
        self._bundles = Bundles(bundle=config.bundle)
        missing = [group for group in names.TOOL_GROUPS if group not in GROUP_ACCESS]
        if missing:
            raise ValueError(
                f"tool group(s) {', '.join(missing)} have no entry in infra.functions.GROUP_ACCESS:"
                " add one saying which tables and services the function reaches"
            )

        self.groups: dict[str, lambda_.Function] = {
            group: self._build_with_access(
                group, GROUP_SPEC, GROUP_ACCESS[group], GROUP_ENVIRONMENT.get(group, {})
            )
            for group in names.TOOL_GROUPS
        }
        self.workers: dict[str, lambda_.Function] = {
            worker: self._build_with_access(
                worker, WORKER_SPECS.get(worker, WORKER_SPEC), access, {}
            )
            for worker, access in WORKER_ACCESS.items()
        }
        # The collection's one data access policy: every group or worker that indexes or queries.
        access = {**GROUP_ACCESS, **WORKER_ACCESS}
        search.allow(
            [
                _role(function)
                for name, function in {**self.groups, **self.workers}.items()
                if access[name].search
            ]
        )

        tokens = data.table(names.TABLE_TOKENS)
        self.gateway = self._build_function(
            GATEWAY,
            GATEWAY_SPEC,
            {
                names.TABLE_ENV[names.TABLE_TOKENS]: tokens.table_name,
                Env.TOKEN_PEPPER_SECRET_ARN: data.token_pepper.secret_arn,
                **{
                    Env.group_function(group): function.function_name
                    for group, function in self.groups.items()
                },
                **(
                    {Env.ALLOWED_ORIGINS: ",".join(config.allowed_origins)}
                    if config.allowed_origins
                    else {}
                ),
            },
            snap_start=True,
        )
        tokens.grant_read_write_data(self.gateway)
        data.token_pepper.grant_read(self.gateway)
        # Exactly the group functions (unqualified ARNs): not `grant_invoke`, which adds `:*`.
        self.gateway.add_to_role_policy(
            iam.PolicyStatement(
                actions=["lambda:InvokeFunction"],
                resources=[function.function_arn for function in self.groups.values()],
            )
        )
        # SnapStart snapshots published versions only: API Gateway calls this alias, which
        # follows the version CDK publishes whenever the code or configuration changes.
        self.gateway_alias = lambda_.Alias(
            self, "GatewayLive", alias_name="live", version=self.gateway.current_version
        )
        Annotations.of(self.gateway).acknowledge_warning(
            "@aws-cdk/aws-lambda:snapStartRequirePublish",
            "The gateway is always reached through the `live` alias of a published version.",
        )
        self._build_gateway_rollout(config)
        suppress(
            _role(self.gateway),
            "IAM5",
            "DynamoDB grants include the tokens table's global secondary indexes (token id and "
            "team lookups); index ARNs have no finer form than <table>/index/*.",
            [arn_token(tokens, "/index/*")],
        )

    def _build_gateway_rollout(self, config: DeployConfig) -> None:
        """The `live` alias moves to a new gateway version through CodeDeploy: in staging and
        prod 10% of requests for 5 minutes first, rolled back by itself when an alarm given to
        `watch_rollout` fires (dev: all at once, so a developer's deploy is not held 5
        minutes)."""
        canary = config.environment in ("staging", "prod")
        self.gateway_rollout = codedeploy.LambdaDeploymentGroup(
            self,
            "GatewayRollout",
            alias=self.gateway_alias,
            deployment_config=(
                codedeploy.LambdaDeploymentConfig.CANARY_10_PERCENT_5_MINUTES
                if canary
                else codedeploy.LambdaDeploymentConfig.ALL_AT_ONCE
            ),
            auto_rollback=codedeploy.AutoRollbackConfig(
                failed_deployment=True, stopped_deployment=True, deployment_in_alarm=True
            ),
        )
        suppress(
            self.gateway_rollout,
            "IAM4",
            "CodeDeploy's service role for Lambda uses the AWS-maintained limited policy.",
            [
                "Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
                "AWSCodeDeployRoleForLambdaLimited"
            ],
        )

    def watch_rollout(self, alarm: cw.IAlarm) -> None:
        """Roll a gateway deployment back while `alarm` fires (the gateway's errors alarm: the
        function-wide metric counts the canary version's invocations too)."""
        self.gateway_rollout.add_alarm(alarm)

    @property
    def all(self) -> dict[str, lambda_.Function]:
        """Every function by name: the gateway, the groups and the workers."""
        return {GATEWAY: self.gateway, **self.groups, **self.workers}

    def set_public_url(self, url: str) -> None:
        """The base URL the gateway advertises (RFC 9728 metadata, origin checks)."""
        self.gateway.add_environment(Env.PUBLIC_URL, url)

    def _build_with_access(
        self,
        name: str,
        spec: FunctionSpec,
        access: GroupAccess,
        extra_environment: Mapping[str, str],
    ) -> lambda_.Function:
        """A group or worker function granted `access`, with the environment that goes with it
        (table names, search endpoint and embedding model) plus `extra_environment`."""
        data, search = self._data, self._search
        environment: dict[str, str] = dict(extra_environment)
        function = self._build_function(name, spec, {})
        read_write_tables = access.read_write_tables
        if access.token_admin and names.TABLE_TOKENS not in read_write_tables:
            read_write_tables = (*read_write_tables, names.TABLE_TOKENS)
        for logical_id in read_write_tables:
            data.table(logical_id).grant_read_write_data(function)
            environment[names.TABLE_ENV[logical_id]] = data.table(logical_id).table_name
        for logical_id in access.read_tables:
            data.table(logical_id).grant_read_data(function)
            environment[names.TABLE_ENV[logical_id]] = data.table(logical_id).table_name
        if access.domain_events and names.TABLE_COORDINATION not in read_write_tables:
            coordination = data.table(names.TABLE_COORDINATION)
            # The table's ARN only (Table.grant adds its indexes, which a put never needs).
            put = iam.PolicyStatement(
                actions=["dynamodb:PutItem"], resources=[coordination.table_arn]
            )
            function.add_to_role_policy(put)
            environment[names.TABLE_ENV[names.TABLE_COORDINATION]] = coordination.table_name
        indexed = [
            data.table(logical_id)
            for logical_id in (*read_write_tables, *access.read_tables)
            if TABLE_SPECS[logical_id].indexes
        ]
        if indexed:
            suppress(
                _role(function),
                "IAM5",
                "DynamoDB grants include the table's global secondary indexes, whose ARNs "
                "have no finer form than <table>/index/*.",
                [arn_token(table, "/index/*") for table in indexed],
            )
        if access.search:
            environment.update(
                {
                    Env.SEARCH_ENDPOINT: search.endpoint,
                    Env.SEARCH_SERVICE: search.service,
                    Env.EMBEDDING_MODEL_ID: EMBEDDING_MODEL_ID,
                    Env.EMBEDDING_DIMENSIONS: str(EMBEDDING_DIMENSIONS),
                }
            )
            allow_invoke_model(function, EMBEDDING_MODEL_ID)
        if access.search and self._config.reranker:
            self._grant_reranker(function, self._config.reranker, environment)
        if access.list_foundation_models:
            environment[Env.MODEL_CATALOG] = "bedrock"
            # ListFoundationModels has no resource-level permissions: "*" is its only form.
            function.add_to_role_policy(
                iam.PolicyStatement(actions=["bedrock:ListFoundationModels"], resources=["*"])
            )
            suppress(
                _role(function),
                "IAM5",
                "bedrock:ListFoundationModels supports no resource-level permissions; it only "
                "lists model ids and names (the persona set_model catalog).",
                ["Resource::*"],
            )
        if access.token_admin:
            data.token_pepper.grant_read(function)
            environment[Env.TOKEN_PEPPER_SECRET_ARN] = data.token_pepper.secret_arn
        for prefix in access.bucket_prefixes:
            self._grant_bucket_prefix(function, prefix)
        if access.bucket_prefixes:
            environment[Env.ARTIFACTS_BUCKET] = data.bucket.bucket_name
        for key, value in sorted(environment.items()):
            function.add_environment(key, value)
        return function

    def _grant_reranker(
        self, function: lambda_.Function, reranker: str, environment: dict[str, str]
    ) -> None:
        """`CAIRN_RERANKER=bedrock:<model>` and exactly what Bedrock's Rerank API needs for that
        model: `bedrock:Rerank` (which has no resource-level form) and `bedrock:InvokeModel`
        on the one model. Every function that searches builds the same search service, so each
        gets both or neither."""
        model = reranker.removeprefix("bedrock:")
        environment[Env.RERANKER] = reranker
        allow_invoke_model(function, model)
        function.add_to_role_policy(
            iam.PolicyStatement(actions=["bedrock:Rerank"], resources=["*"])
        )
        suppress(
            _role(function),
            "IAM5",
            "bedrock:Rerank supports no resource-level permissions; the rerank model itself is "
            "granted by ARN (bedrock:InvokeModel).",
            ["Resource::*"],
        )

    def _grant_bucket_prefix(self, function: lambda_.Function, prefix: str) -> None:
        """Read, write and delete objects under `prefix/`, and list only that prefix."""
        bucket = self._data.bucket
        function.add_to_role_policy(
            iam.PolicyStatement(
                actions=["s3:GetObject", "s3:PutObject", "s3:DeleteObject"],
                resources=[bucket.arn_for_objects(f"{prefix}/*")],
            )
        )
        function.add_to_role_policy(
            iam.PolicyStatement(
                actions=["s3:ListBucket"],
                resources=[bucket.bucket_arn],
                conditions={"StringLike": {"s3:prefix": [f"{prefix}/*"]}},
            )
        )
        if bucket.encryption_key is not None:
            bucket.encryption_key.grant_encrypt_decrypt(function)
        suppress(
            _role(function),
            "IAM5",
            f"Objects under {prefix}/ are named per team and per object at run time; the grant "
            f"is limited to that prefix of the bucket.",
            [arn_token(bucket, f"/{prefix}/*")],
        )

    def _build_function(
        self,
        name: str,
        spec: FunctionSpec,
        environment: Mapping[str, str],
        *,
        snap_start: bool = False,
    ) -> lambda_.Function:
        title = name.capitalize()
        log_group = logs.LogGroup(
            self,
            f"{title}Logs",
            retention=self._config.log_retention,
            removal_policy=self._config.removal_policy,
        )
        # Our own role: no AWSLambdaBasicExecutionRole managed policy, only this log group.
        role = iam.Role(
            self,
            f"{title}Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"cairn {name} function",
        )
        log_group.grant_write(role)
        function = lambda_.Function(
            self,
            f"{title}Function",
            description=f"cairn {name}",
            runtime=BUNDLE_RUNTIME,
            architecture=LAMBDA_ARCHITECTURE,
            handler=f"functions.{name}.handler.handler",
            code=self._bundles.code(name),
            memory_size=spec.memory_mb,
            timeout=spec.timeout,
            role=role,
            log_group=log_group,
            tracing=lambda_.Tracing.ACTIVE
            if self._config.tracing == "active"
            else lambda_.Tracing.PASS_THROUGH,
            snap_start=lambda_.SnapStartConf.ON_PUBLISHED_VERSIONS if snap_start else None,
            environment={
                Env.ENVIRONMENT: self._config.environment,
                Env.STACK_NAME: self._config.stack_name,
                Env.POWERTOOLS_SERVICE_NAME: f"{names.SERVICE}-{name}",
                Env.POWERTOOLS_METRICS_NAMESPACE: names.SERVICE,
                Env.LOG_LEVEL: "INFO",
                TRACER_CAPTURE_RESPONSE: "false",
                Env.CURATION: CURATION,
                **RUNTIME_ENVIRONMENT,
                **environment,
            },
        )
        suppress(role, "IAM5", XRAY_REASON, [XRAY_WILDCARD])
        suppress(
            function,
            "L1",
            "The bundle's bytecode is compiled for the runtime's exact Python, and the build "
            "machines can run 3.13 but cannot install 3.14 (docs/infra/functions-and-bundling.md).",
        )
        return function


def _role(function: lambda_.Function) -> iam.IRole:
    assert function.role is not None, f"{function.node.path} has no role"
    return function.role
