"""EventBridge Scheduler: one shape for a schedule group, the role its schedules run under, and
what a function needs to keep schedules in it (the sync connectors' and the workflows')."""

from __future__ import annotations

from aws_cdk import RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_scheduler as scheduler
from constructs import Construct

from infra.nag import nag_resource, suppress


def schedule_group(
    scope: Construct, *, name: str, description: str
) -> tuple[scheduler.ScheduleGroup, iam.Role]:
    """The schedule group `name` (`ScheduleGroup` in `scope`) and the role its schedules assume
    (`SchedulerRole`, described by `description`).

    The group is never retained, prod included: its schedules start only this stack's functions,
    so a retained group would hold schedules of deleted functions, and its fixed name would make
    CloudFormation refuse to create the stack again. Confused-deputy guard: only schedules in this
    account's group may assume the role. Scheduler sets aws:SourceArn to the schedule *group* ARN
    (its docs warn against scoping to a schedule or a schedule-name prefix: the role could never
    be assumed).
    """
    group = scheduler.ScheduleGroup(
        scope, "ScheduleGroup", schedule_group_name=name, removal_policy=RemovalPolicy.DESTROY
    )
    role = iam.Role(
        scope,
        "SchedulerRole",
        description=description,
        assumed_by=iam.ServicePrincipal(
            "scheduler.amazonaws.com",
            conditions={
                "StringEquals": {"aws:SourceAccount": Stack.of(scope).account},
                "ArnEquals": {"aws:SourceArn": group.schedule_group_arn},
            },
        ),
    )
    return group, role


def allow_manage_schedules(
    function: lambda_.Function, *, group_name: str, names: str, role: iam.IRole, why: str
) -> None:
    """Let `function` create, update, read and delete the schedules `names` (a name or a
    pattern) of the group `group_name`, which run under `role`: it may pass that role to
    Scheduler and to nothing else. `why` tells cdk-nag (IAM5) why `names` is a pattern."""
    schedules = Stack.of(function).format_arn(
        service="scheduler", resource="schedule", resource_name=f"{group_name}/{names}"
    )
    function.add_to_role_policy(
        iam.PolicyStatement(
            actions=[
                "scheduler:CreateSchedule",
                "scheduler:UpdateSchedule",
                "scheduler:GetSchedule",
                "scheduler:DeleteSchedule",
            ],
            resources=[schedules],
        )
    )
    function.add_to_role_policy(
        iam.PolicyStatement(
            actions=["iam:PassRole"],
            resources=[role.role_arn],
            conditions={"StringEquals": {"iam:PassedToService": "scheduler.amazonaws.com"}},
        )
    )
    assert function.role is not None, f"{function.node.path} has no role"
    suppress(function.role, "IAM5", why, [nag_resource(Stack.of(function), schedules)])
