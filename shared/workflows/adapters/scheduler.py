"""`Schedules` on EventBridge Scheduler: one schedule per schedule-triggered workflow, in the
stack's workflow schedule group, invoking the workflows function under the scheduler role with
`{"workflow_schedule": {"team", "workflow_id"}}` (`shared.workflows.scheduled`)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from shared.workflows.models import Workflow

if TYPE_CHECKING:
    from mypy_boto3_scheduler.client import EventBridgeSchedulerClient


class EventBridgeSchedules:
    def __init__(
        self,
        client: EventBridgeSchedulerClient,
        *,
        group: str,
        role_arn: str,
        target_arn: Callable[[], str],
    ) -> None:
        self._client = client
        self._group = group
        self._role_arn = role_arn
        # The workflows function's own ARN, known once it is invoked (a function cannot name
        # its own ARN in its environment: CloudFormation would see a cycle).
        self._target_arn = target_arn

    @staticmethod
    def schedule_name(team: str, workflow_id: str) -> str:
        team_hash = hashlib.sha256(team.encode()).hexdigest()[:10]
        return f"{team_hash}-{workflow_id}"[:64]

    def put(self, team: str, workflow: Workflow) -> None:
        config = workflow.trigger_config
        kwargs: dict[str, Any] = {
            "Name": self.schedule_name(team, workflow.id),
            "GroupName": self._group,
            "ScheduleExpression": config["expression"],
            "FlexibleTimeWindow": {"Mode": "OFF"},
            "Target": {
                "Arn": self._target_arn(),
                "RoleArn": self._role_arn,
                "Input": json.dumps(
                    {"workflow_schedule": {"team": team, "workflow_id": workflow.id}}
                ),
            },
            "Description": f"cairn workflow {workflow.name} (version {workflow.version})"[:512],
        }
        if config.get("timezone"):
            kwargs["ScheduleExpressionTimezone"] = config["timezone"]
        try:
            self._client.create_schedule(**kwargs)
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ConflictException":
                raise
            self._client.update_schedule(**kwargs)

    def remove(self, team: str, workflow_id: str) -> None:
        try:
            self._client.delete_schedule(
                Name=self.schedule_name(team, workflow_id), GroupName=self._group
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ResourceNotFoundException":
                raise

    def remove_team(self, team: str) -> int:
        """Delete every schedule of `team`'s workflows (a team's erasure); how many went.
        Listed by the team's name prefix, and each one's input checked for the team (the
        prefix is a hash: another team's could share it)."""
        prefix = self.schedule_name(team, "")
        removed = 0
        for page in self._client.get_paginator("list_schedules").paginate(
            GroupName=self._group, NamePrefix=prefix
        ):
            for listed in page.get("Schedules", []):
                name = str(listed["Name"])
                detail = self._client.get_schedule(Name=name, GroupName=self._group)
                target = json.loads(detail["Target"].get("Input") or "{}")
                if target.get("workflow_schedule", {}).get("team") != team:
                    continue
                self.remove(team, name.removeprefix(prefix))
                removed += 1
        return removed
