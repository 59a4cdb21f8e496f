"""Workflows: the machinery of the state machines the workflows group compiles (Step Functions
Standard, one per workflow version, created at run time by the workflows function).

Holds the execution log group, the step-dispatch queue with its dead-letter queue (steps run as
`sqs:sendMessage.waitForTaskToken` callbacks), the role every compiled machine runs under (it
may only send to the dispatch queue, trace and log), and `add_state_machine`, which gives a
machine built in CDK logging (ALL, without execution data) and X-Ray tracing.

`connect` wires the functions, each with only what it needs:
- the workflows group: create, update, start and stop machines named `<prefix>-*`, pass the
  machine role to Step Functions only, and answer callbacks (cancel);
- the orchestrator group: answer callbacks (task.complete / task.fail resume the step) and
  start machines like the workflows group (event.publish starts event-triggered workflows);
- the dispatcher worker: fed by the dispatch queue; tasks (the coordination table, granted by
  `infra.functions.WORKER_ACCESS`) and the callback, nothing else.
`observe` adds the alarms (dispatch backlog, failed or timed-out executions; the dead-letter
queue and the dispatcher's errors are alarmed with the other queues and functions) and the
dashboard's executions started / failed / timed out.
"""

from __future__ import annotations

from typing import Final

from aws_cdk import ArnFormat, Duration, Stack
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from infra.config import DeployConfig
from infra.nag import XRAY_REASON, nag_resource, suppress
from infra.naming import unique_name
from infra.observability import threshold_alarm
from infra.queues import work_queue
from infra.schedules import allow_manage_schedules, schedule_group
from shared.config.names import Env

DISPATCH_MAX_RECEIVES: Final = 5
DISPATCH_BATCH_SIZE: Final = 10
# A step message waiting this long means the dispatcher is not keeping up (or is failing).
DISPATCH_BACKLOG_SECONDS: Final = 300
PERIOD: Final = Duration.minutes(5)
CALLBACK_ACTIONS: Final = (
    "states:SendTaskSuccess",
    "states:SendTaskFailure",
    "states:SendTaskHeartbeat",
)
CALLBACK_REASON: Final = (
    "SendTaskSuccess/SendTaskFailure/SendTaskHeartbeat support no resource-level permissions "
    "(the task token is the credential); the function answers only tokens its own records hold."
)
# CreateStateMachine with logging needs these on the caller; they take only Resource '*'.
LOG_DELIVERY_ACTIONS: Final = (
    "logs:CreateLogDelivery",
    "logs:GetLogDelivery",
    "logs:UpdateLogDelivery",
    "logs:DeleteLogDelivery",
    "logs:ListLogDeliveries",
    "logs:PutResourcePolicy",
    "logs:DescribeResourcePolicies",
    "logs:DescribeLogGroups",
)


class Workflows(Construct):
    """`log_group`, `dispatch_queue`, `dead_letter_queue` and `add_state_machine(...)`."""

    def __init__(self, scope: Construct, construct_id: str, *, config: DeployConfig) -> None:
        super().__init__(scope, construct_id)
        self._config = config
        # /aws/vendedlogs/ keeps Step Functions from growing the account's log resource policy.
        # The suffix is the stack's own id, new with each creation: prod retains the group, and
        # a retained group of an earlier stack must not block creating this one again.
        self.log_group = logs.LogGroup(
            self,
            "StateMachineLogs",
            log_group_name=unique_name(f"/aws/vendedlogs/states/{config.stack_name}-workflows-"),
            retention=config.log_retention,
            removal_policy=config.removal_policy,
        )
        self.dispatch_queue, self.dead_letter_queue = work_queue(
            self,
            "Dispatch",
            removal_policy=config.removal_policy,
            holds="the step-dispatch queue",
            visibility_timeout=Duration.minutes(2),
            max_receives=DISPATCH_MAX_RECEIVES,
        )
        # Account-wide names: the stack's name keeps environments and developers apart.
        self.machine_prefix = f"{config.stack_name}-wf"
        self.machine_role = self._machine_role()
        self.alarms: list[cw.Alarm] = []
        # Schedule triggers: one schedule per workflow, created by the workflows function.
        self.schedule_group_name = f"{config.stack_name}-workflows"
        self.schedule_group, self.scheduler_role = schedule_group(
            self,
            name=self.schedule_group_name,
            description="EventBridge Scheduler: starts schedule-triggered cairn workflows",
        )

    def _machine_role(self) -> iam.Role:
        """The role of every compiled machine: send step messages, trace, deliver logs."""
        role = iam.Role(
            self,
            "MachineRole",
            assumed_by=iam.ServicePrincipal("states.amazonaws.com"),
            description="cairn workflow state machines: dispatch steps, trace, log",
        )
        # SendMessage only (grant_send_messages adds GetQueueUrl/GetQueueAttributes, unused).
        role.add_to_policy(
            iam.PolicyStatement(
                actions=["sqs:SendMessage"], resources=[self.dispatch_queue.queue_arn]
            )
        )
        role.add_to_policy(
            iam.PolicyStatement(
                actions=[
                    "xray:PutTraceSegments",
                    "xray:PutTelemetryRecords",
                    "xray:GetSamplingRules",
                    "xray:GetSamplingTargets",
                ],
                resources=["*"],
            )
        )
        role.add_to_policy(iam.PolicyStatement(actions=list(LOG_DELIVERY_ACTIONS), resources=["*"]))
        suppress(
            role,
            "IAM5",
            f"{XRAY_REASON} CloudWatch Logs delivery actions (logs:CreateLogDelivery etc.) "
            "likewise take only Resource '*'.",
            ["Resource::*"],
        )
        return role

    def _arn(self, resource: str, name: str) -> str:
        return Stack.of(self).format_arn(
            service="states",
            resource=resource,
            resource_name=name,
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )

    def connect(
        self,
        *,
        workflows: lambda_.Function,
        orchestrator: lambda_.Function,
        dispatcher: lambda_.Function,
    ) -> None:
        """Give each function its reach (module docstring) and feed the dispatcher."""
        environment = {
            Env.WORKFLOW_QUEUE_URL: self.dispatch_queue.queue_url,
            Env.WORKFLOW_ROLE_ARN: self.machine_role.role_arn,
            Env.WORKFLOW_MACHINE_PREFIX: self.machine_prefix,
            Env.WORKFLOW_LOG_GROUP_ARN: self.log_group.log_group_arn,
        }
        for function in (workflows, orchestrator, dispatcher):
            for key, value in environment.items():
                function.add_environment(key, value)
            function.add_to_role_policy(
                iam.PolicyStatement(actions=list(CALLBACK_ACTIONS), resources=["*"])
            )
            assert function.role is not None
            suppress(function.role, "IAM5", CALLBACK_REASON, ["Resource::*"])
        # The workflows group runs machines; so does the orchestrator, whose event.publish
        # starts the workflows an event triggers.
        for function in (workflows, orchestrator):
            self._grant_run(function)
        self._grant_schedules(workflows)
        dispatcher.add_event_source(
            sources.SqsEventSource(
                self.dispatch_queue,
                batch_size=DISPATCH_BATCH_SIZE,
                report_batch_item_failures=True,
            )
        )

    def _grant_schedules(self, workflows: lambda_.Function) -> None:
        """The workflows function keeps one schedule per schedule-triggered workflow in the
        group; the schedules invoke it (only it) under the scheduler role."""
        workflows.add_environment(Env.WORKFLOW_SCHEDULE_GROUP, self.schedule_group_name)
        workflows.add_environment(Env.WORKFLOW_SCHEDULER_ROLE_ARN, self.scheduler_role.role_arn)
        allow_manage_schedules(
            workflows,
            group_name=self.schedule_group_name,
            names="*",
            role=self.scheduler_role,
            why="Schedules are created per workflow at run time inside the stack's workflow "
            "schedule group: <group>/* is the narrowest form of their names.",
        )
        self.scheduler_role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["lambda:InvokeFunction"], resources=[workflows.function_arn]
            )
        )

    def _grant_run(self, function: lambda_.Function) -> None:
        """Create, update, start and stop the stack's machines; pass only their role."""
        machines = self._arn("stateMachine", f"{self.machine_prefix}-*")
        executions = self._arn("execution", f"{self.machine_prefix}-*:*")
        function.add_to_role_policy(
            iam.PolicyStatement(
                actions=[
                    "states:CreateStateMachine",
                    "states:UpdateStateMachine",
                    "states:DescribeStateMachine",
                    "states:StartExecution",
                    "states:TagResource",
                ],
                resources=[machines],
            )
        )
        function.add_to_role_policy(
            iam.PolicyStatement(
                actions=["states:StopExecution", "states:DescribeExecution"],
                resources=[executions],
            )
        )
        # ListStateMachines (finding a machine a retried start created) has no resource form.
        function.add_to_role_policy(
            iam.PolicyStatement(
                actions=["states:ListStateMachines", *LOG_DELIVERY_ACTIONS], resources=["*"]
            )
        )
        function.add_to_role_policy(
            iam.PolicyStatement(
                actions=["iam:PassRole"],
                resources=[self.machine_role.role_arn],
                conditions={"StringEquals": {"iam:PassedToService": "states.amazonaws.com"}},
            )
        )
        assert function.role is not None
        suppress(
            function.role,
            "IAM5",
            "The workflows function creates one state machine per workflow version at run "
            "time: machines and executions are named <prefix>-*, the narrowest form their "
            "run-time names allow; ListStateMachines and the CloudWatch Logs delivery actions "
            "support only Resource '*'.",
            [
                "Resource::*",
                nag_resource(Stack.of(self), machines),
                nag_resource(Stack.of(self), executions),
            ],
        )

    def observe(self, *, topic: sns.ITopic, dashboard: cw.Dashboard) -> None:
        """Alarms on the dispatch backlog and on failed or timed-out executions; dashboard
        widgets of executions started, failed and timed out (every machine of the stack)."""
        action = cw_actions.SnsAction(topic)
        backlog = self.dispatch_queue.metric_approximate_age_of_oldest_message(
            period=PERIOD, statistic="Maximum"
        )
        # Machines are created at run time, so no alarm can name their metrics: a rule on their
        # status-change events counts the failures (MatchedEvents, per rule) for one alarm. It
        # needs no target (the machines' own logs hold the detail).
        failures = events.Rule(
            self,
            "FailedExecutions",
            description="cairn workflow executions that failed or timed out",
            event_pattern=events.EventPattern(
                source=["aws.states"],
                detail_type=["Step Functions Execution Status Change"],
                detail={
                    "status": ["FAILED", "TIMED_OUT"],
                    "stateMachineArn": [{"prefix": self._arn("stateMachine", self.machine_prefix)}],
                },
            ),
        )
        failed = cw.Metric(
            namespace="AWS/Events",
            metric_name="MatchedEvents",
            dimensions_map={"RuleName": failures.rule_name},
            period=PERIOD,
            statistic="Sum",
        )
        for construct_id, metric, threshold, what in (
            (
                "DispatchBacklog",
                backlog,
                DISPATCH_BACKLOG_SECONDS,
                "a workflow step waited in the dispatch queue",
            ),
            ("ExecutionsFailed", failed, 1, "workflow executions failed or timed out"),
        ):
            self.alarms.append(threshold_alarm(self, construct_id, metric, threshold, what, action))
        dashboard.add_widgets(
            *(
                cw.GraphWidget(
                    title=f"workflow executions {label}",
                    width=8,
                    left=[
                        cw.MathExpression(
                            expression=(
                                f"SUM(SEARCH('{{AWS/States,StateMachineArn}} MetricName="
                                f"\"{metric}\" {self.machine_prefix}', 'Sum', 300))"
                            ),
                            label=label,
                            period=PERIOD,
                        )
                    ],
                )
                for label, metric in (
                    ("started", "ExecutionsStarted"),
                    ("failed", "ExecutionsFailed"),
                    ("timed out", "ExecutionsTimedOut"),
                )
            ),
            cw.GraphWidget(
                title="workflow dispatch queue: oldest step (s)", width=8, left=[backlog]
            ),
        )

    def add_state_machine(
        self, construct_id: str, definition_body: sfn.DefinitionBody
    ) -> sfn.StateMachine:
        """A Standard state machine logging to `log_group` with tracing on.

        >>> workflows.add_state_machine("Review", sfn.DefinitionBody.from_chainable(chain))
        """
        machine = sfn.StateMachine(
            self,
            construct_id,
            definition_body=definition_body,
            state_machine_type=sfn.StateMachineType.STANDARD,
            tracing_enabled=True,
            # Execution data carries task payloads (agent content): keep it out of the logs.
            logs=sfn.LogOptions(
                destination=self.log_group, level=sfn.LogLevel.ALL, include_execution_data=False
            ),
            removal_policy=self._config.removal_policy,
        )
        suppress(
            machine.role,
            "IAM5",
            f"{XRAY_REASON} CloudWatch Logs delivery actions (logs:CreateLogDelivery etc.) "
            "likewise take only Resource '*'.",
            ["Resource::*"],
        )
        return machine
