"""Workflows: ready for the state machines the workflows group compiles (Step Functions Standard).

Holds the execution log group, the step-dispatch queue with its dead-letter queue (steps run as
`sqs:sendMessage.waitForTaskToken` callbacks), and `add_state_machine`, which gives every
machine logging (ALL, without execution data) and X-Ray tracing.
"""

from __future__ import annotations

from typing import Final

from aws_cdk import Duration
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from infra.config import DeployConfig
from infra.nag import XRAY_REASON, suppress

DISPATCH_MAX_RECEIVES: Final = 5


class Workflows(Construct):
    """`log_group`, `dispatch_queue`, `dead_letter_queue` and `add_state_machine(...)`."""

    def __init__(self, scope: Construct, construct_id: str, *, config: DeployConfig) -> None:
        super().__init__(scope, construct_id)
        self._config = config
        # /aws/vendedlogs/ keeps Step Functions from growing the account's log resource policy.
        self.log_group = logs.LogGroup(
            self,
            "StateMachineLogs",
            log_group_name=f"/aws/vendedlogs/states/{config.stack_name}-workflows",
            retention=config.log_retention,
            removal_policy=config.removal_policy,
        )
        self.dead_letter_queue = sqs.Queue(
            self,
            "DispatchDeadLetters",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=Duration.days(14),
            removal_policy=config.removal_policy,
        )
        suppress(
            self.dead_letter_queue,
            "SQS3",
            "This queue is the dead-letter queue of the step-dispatch queue.",
        )
        self.dispatch_queue = sqs.Queue(
            self,
            "DispatchQueue",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            visibility_timeout=Duration.minutes(2),
            retention_period=Duration.days(4),
            dead_letter_queue=sqs.DeadLetterQueue(
                queue=self.dead_letter_queue, max_receive_count=DISPATCH_MAX_RECEIVES
            ),
            removal_policy=config.removal_policy,
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
