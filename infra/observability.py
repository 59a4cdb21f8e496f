"""Observability: one dashboard and the alarms that page, all routed to one encrypted topic, and
what every function logs (level and format per environment)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from aws_cdk import Aws, Duration
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra.api import Api
from infra.config import DeployConfig

PERIOD: Final = Duration.minutes(5)
API_5XX_THRESHOLD: Final = 5  # per period: a burst of 5xx, not one unlucky request
WIDGET_WIDTH: Final = 8
# What a function logs, per environment (docs/infra/observability.md, "Logs"). Lambda's advanced
# logging controls filter by level before CloudWatch ingests (and bills) a line. The application
# level: dev keeps one INFO line per tool call in each function; prod logs warnings and errors only
# (per-call figures come from metrics and sampled traces). The system level WARN drops Lambda's
# START/END/REPORT lines (about 380 bytes per invocation, two invocations per tool call): the
# Duration and Errors metrics carry what they say. Powertools' per-invocation DEBUG sampling
# (POWERTOOLS_LOGGER_SAMPLE_RATE) is not used: the Lambda filter would drop those lines.
APPLICATION_LOG_LEVEL: Final = {"dev": "INFO", "staging": "INFO", "prod": "WARN"}
SYSTEM_LOG_LEVEL: Final = "WARN"


class Observability(Construct):
    """`topic` (alarm notifications), `alarms` and `dashboard`."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: DeployConfig,
        api: Api,
        functions: Mapping[str, lambda_.Function],
        tables: Mapping[str, dynamodb.ITable],
        dead_letter_queues: Mapping[str, sqs.IQueue],
        stream_functions: Mapping[str, lambda_.IFunction],
    ) -> None:
        super().__init__(scope, construct_id)
        for function in functions.values():
            set_log_levels(function, config.environment)
        # CloudWatch cannot publish to a topic under the AWS-managed SNS key: a CMK it may use.
        key = kms.Key(
            self,
            "AlarmTopicKey",
            description="cairn alarm topic encryption",
            enable_key_rotation=True,
            removal_policy=config.removal_policy,
        )
        key.grant(
            iam.ServicePrincipal("cloudwatch.amazonaws.com"), "kms:Decrypt", "kms:GenerateDataKey*"
        )
        self.topic = sns.Topic(
            self, "AlarmTopic", display_name="cairn alarms", master_key=key, enforce_ssl=True
        )
        # The topic policy CDK writes holds only the TLS deny: without this allow, CloudWatch
        # may not publish and no alarm arrives. Only alarms of this account.
        self.topic.add_to_resource_policy(
            iam.PolicyStatement(
                sid="CloudWatchAlarmsOfThisAccount",
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                actions=["sns:Publish"],
                resources=[self.topic.topic_arn],
                conditions={"StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID}},
            )
        )
        if config.alarm_email:
            self.topic.add_subscription(subscriptions.EmailSubscription(config.alarm_email))
        self._action = cw_actions.SnsAction(self.topic)
        self.alarms: list[cw.Alarm] = []
        # By function name: what a deployment watches to roll a bad version back.
        self.function_errors: dict[str, cw.Alarm] = {}

        api_5xx = api.metric("server_error", "Sum")
        self._alarm("Api5xx", api_5xx, API_5XX_THRESHOLD, "API returned 5xx responses")
        for name, function in functions.items():
            title = name.capitalize()
            self.function_errors[name] = self._alarm(
                f"{title}Errors",
                function.metric_errors(period=PERIOD, statistic="Sum"),
                1,
                f"{name} function errors",
            )
            self._alarm(
                f"{title}Throttles",
                function.metric_throttles(period=PERIOD, statistic="Sum"),
                1,
                f"{name} function throttled",
            )
        for logical_id, table in tables.items():
            self._alarm(
                f"{logical_id.capitalize()}TableThrottles",
                _table_throttles(logical_id, table),
                1,
                f"{logical_id} table throttled requests",
            )
        # A record in a dead-letter queue is work given up on after every retry (for the
        # curator: a memory left pending): page on the first one.
        for name, queue in dead_letter_queues.items():
            self._alarm(
                f"{name.capitalize()}DeadLetters",
                _queue_depth(queue),
                1,
                f"{name} dead-letter queue holds failed records",
            )

        self.dashboard = cw.Dashboard(
            self,
            "Dashboard",
            dashboard_name=config.stack_name,
            default_interval=Duration.hours(3),
        )
        self.dashboard.add_widgets(
            _graph("API requests", [api.metric("count", "Sum")]),
            _graph("API errors", [api_5xx, api.metric("client_error", "Sum")]),
            _graph(
                "API latency p50 / p99",
                [api.metric("latency", statistic) for statistic in ("p50", "p99")],
            ),
        )
        for name, function in functions.items():
            self.dashboard.add_widgets(
                _graph(
                    f"{name}: requests, errors, throttles",
                    [
                        function.metric_invocations(period=PERIOD, statistic="Sum"),
                        function.metric_errors(period=PERIOD, statistic="Sum"),
                        function.metric_throttles(period=PERIOD, statistic="Sum"),
                    ],
                ),
                _graph(
                    f"{name}: duration p50 / p99",
                    [function.metric_duration(period=PERIOD, statistic=s) for s in ("p50", "p99")],
                ),
            )
        for name, worker in stream_functions.items():
            # How far behind the stream the worker is: records wait this long to be handled.
            self.dashboard.add_widgets(
                _graph(
                    f"{name}: stream iterator age (max)",
                    [worker.metric("IteratorAge", period=PERIOD, statistic="Maximum")],
                )
            )
        if dead_letter_queues:
            self.dashboard.add_widgets(
                _graph(
                    "dead-letter queues: visible messages",
                    [_queue_depth(queue, label=name) for name, queue in dead_letter_queues.items()],
                )
            )
        self.dashboard.add_widgets(
            _graph(
                "DynamoDB consumed read capacity",
                [
                    t.metric_consumed_read_capacity_units(period=PERIOD, label=n)
                    for n, t in tables.items()
                ],
            ),
            _graph(
                "DynamoDB consumed write capacity",
                [
                    t.metric_consumed_write_capacity_units(period=PERIOD, label=n)
                    for n, t in tables.items()
                ],
            ),
            _graph(
                "DynamoDB throttled requests",
                [_table_throttles(n, t) for n, t in tables.items()],
            ),
        )

    def _alarm(self, construct_id: str, metric: cw.IMetric, threshold: int, what: str) -> cw.Alarm:
        alarm = threshold_alarm(self, construct_id, metric, threshold, what, self._action)
        self.alarms.append(alarm)
        return alarm


def threshold_alarm(
    scope: Construct,
    construct_id: str,
    metric: cw.IMetric,
    threshold: int,
    what: str,
    action: cw.IAlarmAction,
) -> cw.Alarm:
    """An alarm when `metric` reaches `threshold` in one period (missing data is not a breach);
    `action` hears of it and of the return to OK. `what` names the trouble in its description."""
    alarm = cw.Alarm(
        scope,
        construct_id,
        metric=metric,
        threshold=threshold,
        evaluation_periods=1,
        comparison_operator=cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treat_missing_data=cw.TreatMissingData.NOT_BREACHING,
        alarm_description=f"cairn: {what} (>= {threshold} in 5 minutes)",
    )
    alarm.add_alarm_action(action)
    alarm.add_ok_action(action)
    return alarm


def set_log_levels(function: lambda_.Function, environment: str) -> None:
    """JSON logs filtered by Lambda at the environment's application level and at WARN for
    Lambda's own lines; Powertools' LOG_LEVEL agrees (Lambda's level would win anyway)."""
    level = APPLICATION_LOG_LEVEL.get(environment, "INFO")
    cfn = function.node.default_child
    assert isinstance(cfn, lambda_.CfnFunction)
    # Overrides, not `logging_config`: the construct already set LoggingConfig.LogGroup.
    cfn.add_property_override("LoggingConfig.LogFormat", "JSON")
    cfn.add_property_override("LoggingConfig.ApplicationLogLevel", level)
    cfn.add_property_override("LoggingConfig.SystemLogLevel", SYSTEM_LOG_LEVEL)
    function.add_environment("LOG_LEVEL", level)


def _table_throttles(name: str, table: dynamodb.ITable) -> cw.MathExpression:
    """Read + write throttle events of a table (ids unique per table: graphs share them)."""
    return cw.MathExpression(
        expression=f"{name}_reads + {name}_writes",
        using_metrics={
            f"{name}_reads": table.metric("ReadThrottleEvents", period=PERIOD, statistic="Sum"),
            f"{name}_writes": table.metric("WriteThrottleEvents", period=PERIOD, statistic="Sum"),
        },
        label=name,
        period=PERIOD,
    )


def _queue_depth(queue: sqs.IQueue, label: str | None = None) -> cw.Metric:
    return queue.metric_approximate_number_of_messages_visible(
        period=PERIOD, statistic="Maximum", label=label
    )


def _graph(title: str, metrics: list[cw.IMetric]) -> cw.GraphWidget:
    return cw.GraphWidget(title=title, left=metrics, width=WIDGET_WIDTH)
