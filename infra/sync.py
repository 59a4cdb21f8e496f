"""Sync: the EventBridge Scheduler group that will hold connector-sync schedules, and the role
the scheduler assumes to start them (it gains permissions only through `allow_invoke`)."""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_scheduler as scheduler
from constructs import Construct

from infra.config import DeployConfig


class Sync(Construct):
    """`schedule_group` and `scheduler_role`."""

    def __init__(self, scope: Construct, construct_id: str, *, config: DeployConfig) -> None:
        super().__init__(scope, construct_id)
        self.schedule_group = scheduler.ScheduleGroup(
            self,
            "ScheduleGroup",
            schedule_group_name=f"{config.stack_name}-sync",
            removal_policy=config.removal_policy,
        )
        self.scheduler_role = iam.Role(
            self,
            "SchedulerRole",
            description="EventBridge Scheduler: starts cairn connector syncs",
            # Confused-deputy guard: only schedules in this account's sync group may assume it.
            # Scheduler sets aws:SourceArn to the schedule *group* ARN (its docs warn against
            # scoping to a schedule or a schedule-name prefix: the role could never be assumed).
            assumed_by=iam.ServicePrincipal(
                "scheduler.amazonaws.com",
                conditions={
                    "StringEquals": {"aws:SourceAccount": Stack.of(self).account},
                    "ArnEquals": {"aws:SourceArn": self.schedule_group.schedule_group_arn},
                },
            ),
        )

    def allow_invoke(self, function: lambda_.IFunction) -> None:
        """Let this group's schedules invoke `function` (the sync runner)."""
        self.scheduler_role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["lambda:InvokeFunction"], resources=[function.function_arn]
            )
        )
