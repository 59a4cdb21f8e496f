"""The cairn stack: composes one construct per concern and publishes the stable outputs."""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Stack, Tags
from constructs import Construct

from infra.api import Api
from infra.config import DeployConfig
from infra.data import Data
from infra.events import DomainEventBus
from infra.functions import Functions
from infra.knowledge import Knowledge
from infra.oauth import OAuth
from infra.observability import Observability
from infra.search import Search
from infra.sync import Sync
from infra.workers import Workers
from infra.workflows import Workflows
from shared.config import names


class CairnStack(Stack):
    """Everything one environment needs; constructs build, this class only wires them."""

    def __init__(
        self, scope: Construct, construct_id: str, *, config: DeployConfig, **kwargs: Any
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.config = config
        Tags.of(self).add("service", names.SERVICE)
        Tags.of(self).add("environment", config.environment)
        # CDK makes every function depend on its role and the role's policy; cfn-lint calls the
        # role half redundant (W3005). Harmless, and not ours to change.
        self.template_options.metadata = {"cfn-lint": {"config": {"ignore_checks": ["W3005"]}}}

        self.data = Data(self, "Data", config=config)
        self.search = Search(self, "Search", config=config)
        self.functions = Functions(
            self, "Functions", config=config, data=self.data, search=self.search
        )
        self.workers = Workers(
            self, "Workers", config=config, data=self.data, workers=self.functions.workers
        )
        self.api = Api(self, "Api", config=config, handler=self.functions.gateway_alias)
        self.functions.set_public_url(self.api.base_url)
        self.oauth: OAuth | None = None
        if config.oauth:
            self.oauth = OAuth(
                self,
                "OAuth",
                config=config,
                resource_url=self.api.mcp_url,
                console_callback_url=f"{self.api.base_url}/console/oauth-callback",
            )
            gateway = self.functions.gateway
            gateway.add_environment(names.Env.OAUTH_ISSUER, self.oauth.issuer)
            gateway.add_environment(names.Env.OAUTH_AUDIENCE, self.api.mcp_url)
            # The console signs people in through the same pool (shared.console.oauth).
            gateway.add_environment(names.Env.OAUTH_LOGIN_URL, self.oauth.domain.base_url())
            gateway.add_environment(
                names.Env.OAUTH_CLIENT_ID, self.oauth.client.user_pool_client_id
            )
        self.workflows = Workflows(self, "Workflows", config=config)
        self.workflows.connect(
            workflows=self.functions.groups[names.GROUP_WORKFLOWS],
            orchestrator=self.functions.groups[names.GROUP_ORCHESTRATOR],
            dispatcher=self.functions.workers[names.WORKER_WORKFLOW_DISPATCHER],
        )
        self.events = DomainEventBus(
            self,
            "Events",
            config=config,
            data=self.data,
            publisher=self.functions.workers[names.WORKER_EVENT_PUBLISHER],
        )
        self.sync = Sync(self, "Sync", config=config)
        self.sync.allow_invoke(self.functions.workers[names.WORKER_SYNC_RUNNER])
        self.sync.allow_manage(
            self.functions.groups[names.GROUP_SYNC],
            self.functions.workers[names.WORKER_SYNC_RUNNER],
        )
        self.sync.allow_connectors(
            [
                self.functions.groups[names.GROUP_SYNC],
                self.functions.workers[names.WORKER_SYNC_RUNNER],
            ],
            buckets=config.connector_buckets,
            secrets=config.connector_secrets,
        )
        self.knowledge = Knowledge(
            self,
            "Knowledge",
            config=config,
            group=self.functions.groups[names.GROUP_KNOWLEDGE],
            worker=self.functions.workers[names.WORKER_KNOWLEDGE_ENRICHER],
            api=self.api,
            sync=self.sync,
            table=self.data.table(names.TABLE_KNOWLEDGE),
            # Finished tasks (orchestrator) and ended workflows (a cancel runs in workflows).
            producers=[
                self.functions.groups[names.GROUP_ORCHESTRATOR],
                self.functions.groups[names.GROUP_WORKFLOWS],
            ],
        )
        self.observability = Observability(
            self,
            "Observability",
            config=config,
            api=self.api,
            functions=self.functions.all,
            tables=self.data.tables,
            dead_letter_queues={
                **self.workers.dead_letter_queues,
                "workflow_dispatch": self.workflows.dead_letter_queue,
                "knowledge": self.knowledge.dead_letter_queue,
                "event_publisher": self.events.dead_letter_queue,
            },
            stream_functions={
                **self.workers.stream_functions,
                names.WORKER_EVENT_PUBLISHER: self.events.publisher,
            },
        )

        self.workflows.observe(
            topic=self.observability.topic, dashboard=self.observability.dashboard
        )
        self.functions.watch_rollout(self.observability.function_errors["gateway"])
        self._output(names.Outputs.MCP_URL, self.api.mcp_url, "MCP endpoint for clients")
        if self.api.origin_url is not None:
            self._output(
                names.Outputs.ORIGIN_URL,
                self.api.origin_url,
                "CloudFront's origin: refuses calls without the origin header",
            )
        for logical_id, table in self.data.tables.items():
            self._output(names.TABLE_OUTPUTS[logical_id], table.table_name, f"{logical_id} table")
        self._output(
            names.Outputs.ARTIFACTS_BUCKET, self.data.bucket.bucket_name, "artifacts and inbox"
        )
        self._output(names.Outputs.SEARCH_ENDPOINT, self.search.endpoint, "search collection")
        self._output(names.Outputs.ALARM_TOPIC, self.observability.topic.topic_arn, "alarms")
        self._output(
            names.Outputs.TOKEN_PEPPER_SECRET,
            self.data.token_pepper.secret_arn,
            "token hash key (the CLI reads it to issue tokens)",
        )
        self._output(
            names.Outputs.WORKFLOW_QUEUE, self.workflows.dispatch_queue.queue_url, "step dispatch"
        )
        self._output(
            names.Outputs.SYNC_SCHEDULE_GROUP,
            self.sync.schedule_group.schedule_group_name,
            "connector-sync schedules",
        )
        self._output(
            names.Outputs.SYNC_RUNNER_ARN,
            self.functions.workers[names.WORKER_SYNC_RUNNER].function_arn,
            "what team sync schedules start",
        )
        self._output(
            names.Outputs.SYNC_SCHEDULER_ROLE_ARN,
            self.sync.scheduler_role.role_arn,
            "the role team sync schedules run under",
        )
        self._output(
            names.Outputs.WORKFLOW_SCHEDULE_GROUP,
            self.workflows.schedule_group_name,
            "workflow schedules (a team's erasure deletes its own)",
        )
        self._output(
            names.Outputs.WORKFLOWS_FUNCTION_ARN,
            self.functions.groups[names.GROUP_WORKFLOWS].function_arn,
            "what workflow schedules invoke (an import re-creates a team's)",
        )
        self._output(
            names.Outputs.WORKFLOW_SCHEDULER_ROLE_ARN,
            self.workflows.scheduler_role.role_arn,
            "the role workflow schedules run under",
        )
        self._output(
            names.Outputs.WEBHOOK_SECRETS,
            self.knowledge.webhook_secrets.secret_arn,
            "GitHub webhook secrets per team (a team's erasure drops its entry)",
        )
        self._output(
            names.Outputs.EVENT_BUS_NAME, self.events.bus.event_bus_name, "domain event bus"
        )
        self._output(names.Outputs.EVENT_BUS_ARN, self.events.bus.event_bus_arn, "its ARN")
        if self.oauth is not None:
            self._output(names.Outputs.OAUTH_ISSUER, self.oauth.issuer, "OAuth issuer")
            self._output(
                names.Outputs.OAUTH_CLIENT_ID,
                self.oauth.client.user_pool_client_id,
                "OAuth client id for MCP clients",
            )
            self._output(
                names.Outputs.OAUTH_LOGIN_DOMAIN,
                self.oauth.domain.base_url(),
                "hosted login (authorization and token endpoints)",
            )

    def _output(self, key: str, value: str, description: str) -> None:
        # Output ids are the stable keys of names.Outputs (read by the CLI and pipelines).
        CfnOutput(self, key, value=value, description=description)
