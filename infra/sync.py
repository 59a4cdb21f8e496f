"""Sync: the EventBridge Scheduler group that holds the teams' sync schedules, the role the
scheduler assumes to start the sync runner (it gains permissions only through `allow_invoke`),
and what the sync group's function needs to start the runner asynchronously and to manage a
team's schedule through the sync tools (`allow_manage`)."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from infra.config import DeployConfig
from infra.schedules import allow_manage_schedules, schedule_group
from shared.config.names import Env
from shared.sync.schedules import SCHEDULE_PREFIX


class Sync(Construct):
    """`schedule_group` and `scheduler_role`."""

    def __init__(self, scope: Construct, construct_id: str, *, config: DeployConfig) -> None:
        super().__init__(scope, construct_id)
        self.schedule_group_name = f"{config.stack_name}-sync"
        self.schedule_group, self.scheduler_role = schedule_group(
            self,
            name=self.schedule_group_name,
            description="EventBridge Scheduler: starts cairn connector syncs",
        )

    def allow_invoke(self, function: lambda_.IFunction) -> None:
        """Let this group's schedules invoke `function` (the sync runner)."""
        self.scheduler_role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["lambda:InvokeFunction"], resources=[function.function_arn]
            )
        )

    def allow_manage(self, group: lambda_.Function, runner: lambda_.Function) -> None:
        """Let the sync group's function start `runner` asynchronously (a large team's sync and
        embeddings_build) and create, read and delete `sync-*` schedules in this group that
        start it under the scheduler role (the sync_schedule_* tools), and nothing else."""
        group.add_environment(Env.SYNC_RUNNER_ARN, runner.function_arn)
        group.add_environment(Env.SYNC_SCHEDULE_GROUP, self.schedule_group_name)
        group.add_environment(Env.SYNC_SCHEDULER_ROLE_ARN, self.scheduler_role.role_arn)
        group.add_to_role_policy(
            iam.PolicyStatement(actions=["lambda:InvokeFunction"], resources=[runner.function_arn])
        )
        allow_manage_schedules(
            group,
            group_name=self.schedule_group_name,
            names=f"{SCHEDULE_PREFIX}*",
            role=self.scheduler_role,
            why="Team schedules are named sync-<team> at run time; the grant covers only that "
            "prefix in this stack's sync schedule group.",
        )
        # A run that fails is recorded failed and started again by its caller or the next
        # schedule: Lambda's own retries of an asynchronous invoke would only find it finished.
        runner.configure_async_invoke(retry_attempts=0, max_event_age=Duration.hours(1))

    def allow_connectors(
        self,
        functions: list[lambda_.Function],
        *,
        buckets: tuple[str, ...],
        secrets: tuple[str, ...],
    ) -> None:
        """Let the functions that run connectors (the sync group's, for a small team's sync in
        the call, and the runner) list and read the configured buckets (`s3` connectors) and
        read the configured token secrets (`git` connectors), and nothing else."""
        from aws_cdk import Stack

        from infra.nag import nag_resource, suppress

        for function in functions:
            if buckets:
                function.add_to_role_policy(
                    iam.PolicyStatement(
                        actions=["s3:ListBucket"],
                        resources=[f"arn:{Stack.of(self).partition}:s3:::{b}" for b in buckets],
                    )
                )
                objects = [f"arn:{Stack.of(self).partition}:s3:::{b}/*" for b in buckets]
                function.add_to_role_policy(
                    iam.PolicyStatement(actions=["s3:GetObject"], resources=objects)
                )
                assert function.role is not None, f"{function.node.path} has no role"
                suppress(
                    function.role,
                    "IAM5",
                    "An s3 connector reads any object of the buckets the deployment names "
                    "(context connector_buckets); only those buckets.",
                    [nag_resource(Stack.of(function), o) for o in objects],
                )
            if secrets:
                function.add_to_role_policy(
                    iam.PolicyStatement(
                        actions=["secretsmanager:GetSecretValue"], resources=list(secrets)
                    )
                )
