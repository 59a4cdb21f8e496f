"""Knowledge (seed 003): what the knowledge group needs beyond its table.

- **Enrichment**: functions that capture events (the knowledge group; the orchestrator, for its
  finished tasks) write them and send their ids to a FIFO queue (one message group per team,
  so a team's sessions are built in order and never twice at once) feeding the enrichment
  worker in batches, with partial-batch failure reports; a message failing `MAX_RECEIVES`
  times moves to a FIFO dead-letter queue, which `Observability` alarms on. Encrypted,
  TLS-only.
- **Capture routes** on the API: `POST /ingest/events` and `POST /hooks/github/{team}`, both to
  the gateway (which authenticates the token, or forwards the delivery to the knowledge
  function to verify).
- **Webhook secrets**: one Secrets Manager secret, a JSON object team → GitHub webhook secret,
  readable by the knowledge function only.
- **CI pull schedule**: an EventBridge Scheduler schedule (in the connector-sync group) that
  starts the enrichment worker's scheduled Actions pull every `CI_PULL_MINUTES`, for repos
  without webhooks (their list and token are read from the same secret).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Final

from aws_cdk import Duration
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_scheduler as scheduler
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from infra.api import Api
from infra.config import DeployConfig
from infra.nag import arn_token, suppress
from infra.queues import work_queue
from infra.sync import Sync
from shared.config import names

BATCH_SIZE: Final = 10
MAX_RECEIVES: Final = 3
CI_PULL_MINUTES: Final = 15
ENV_QUEUE_URL: Final = "CAIRN_KNOWLEDGE_QUEUE_URL"
ENV_WEBHOOK_SECRET_ARN: Final = "CAIRN_GITHUB_WEBHOOK_SECRET_ARN"
CI_PULL_EVENT: Final = {"knowledge": "ci_pull"}


class Knowledge(Construct):
    """`queue`, `dead_letter_queue`, `webhook_secrets`, `routes` and `ci_pull_schedule`."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: DeployConfig,
        group: lambda_.Function,
        worker: lambda_.Function,
        api: Api,
        sync: Sync,
        table: dynamodb.ITable,
        producers: Sequence[lambda_.Function] = (),
    ) -> None:
        super().__init__(scope, construct_id)
        self.queue, self.dead_letter_queue = work_queue(
            self,
            "Enrichment",
            removal_policy=config.removal_policy,
            holds="the knowledge enrichment queue",
            # Six times the worker's timeout, as Lambda advises for queue sources.
            visibility_timeout=Duration.minutes(6),
            max_receives=MAX_RECEIVES,
            fifo=True,
        )
        worker.add_event_source(
            sources.SqsEventSource(
                self.queue, batch_size=BATCH_SIZE, report_batch_item_failures=True
            )
        )
        self.queue.grant_send_messages(group)
        group.add_environment(ENV_QUEUE_URL, self.queue.queue_url)
        # Functions that capture events of their own (the orchestrator's finished tasks): they
        # write events and queue them for enrichment, nothing more.
        for producer in producers:
            table.grant_write_data(producer)
            producer.add_environment(names.TABLE_ENV[names.TABLE_KNOWLEDGE], table.table_name)
            self.queue.grant_send_messages(producer)
            producer.add_environment(ENV_QUEUE_URL, self.queue.queue_url)
            assert producer.role is not None
            suppress(
                producer.role,
                "IAM5",
                "DynamoDB grants include the knowledge table's by_time index, whose ARN has no "
                "finer form than <table>/index/*.",
                [arn_token(table, "/index/*")],
            )

        self.webhook_secrets = secretsmanager.Secret(
            self,
            "GithubWebhookSecrets",
            description="cairn: GitHub webhook secret per team (JSON object team -> secret)",
            generate_secret_string=secretsmanager.SecretStringGenerator(
                secret_string_template=json.dumps({}), generate_string_key="unused"
            ),
        )
        suppress(
            self.webhook_secrets,
            "SMG4",
            "Each team's webhook secret is set by the team in GitHub and here together; an "
            "automatic rotation would break delivery until GitHub is updated.",
        )
        self.webhook_secrets.grant_read(group)
        self.webhook_secrets.grant_read(worker)
        group.add_environment(ENV_WEBHOOK_SECRET_ARN, self.webhook_secrets.secret_arn)
        worker.add_environment(ENV_WEBHOOK_SECRET_ARN, self.webhook_secrets.secret_arn)

        # To the gateway, like every route of the API (which carries their nag suppressions:
        # the ingest route's token is checked by the gateway, a webhook delivery by its
        # X-Hub-Signature-256 against the team's secret in the knowledge function).
        self.routes = api.add_routes([("POST", "/ingest/events"), ("POST", "/hooks/github/{team}")])

        sync.allow_invoke(worker)
        self.ci_pull_schedule = scheduler.CfnSchedule(
            self,
            "CiPullSchedule",
            group_name=sync.schedule_group.schedule_group_name,
            description="cairn: pull GitHub Actions runs of repos without webhooks",
            schedule_expression=f"rate({CI_PULL_MINUTES} minutes)",
            flexible_time_window=scheduler.CfnSchedule.FlexibleTimeWindowProperty(
                mode="FLEXIBLE", maximum_window_in_minutes=5
            ),
            target=scheduler.CfnSchedule.TargetProperty(
                arn=worker.function_arn,
                role_arn=sync.scheduler_role.role_arn,
                input=json.dumps(CI_PULL_EVENT),
                retry_policy=scheduler.CfnSchedule.RetryPolicyProperty(
                    maximum_retry_attempts=2, maximum_event_age_in_seconds=600
                ),
            ),
        )
