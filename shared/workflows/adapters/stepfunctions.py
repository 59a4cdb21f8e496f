"""`StateMachines` on AWS Step Functions: one Standard state machine per workflow version,
compiled by `shared.workflows.asl`, run under the role the stack gives state machines."""

from __future__ import annotations

import hashlib
import json
from dataclasses import KW_ONLY, dataclass
from typing import TYPE_CHECKING, Any

import boto3
from botocore.exceptions import ClientError

from shared.config.settings import Settings
from shared.workflows.asl import compile_definition
from shared.workflows.models import Execution, Workflow, WorkflowDefinition

if TYPE_CHECKING:
    from mypy_boto3_stepfunctions.client import SFNClient

# A token that is gone (the execution ended, timed out or was stopped) needs no answer.
_GONE = frozenset({"TaskDoesNotExist", "TaskTimedOut", "InvalidToken", "ExecutionDoesNotExist"})
MAX_CAUSE = 32_768


def console_url(region: str, execution_arn: str) -> str:
    return (
        f"https://{region}.console.aws.amazon.com/states/home?region={region}"
        f"#/v2/executions/details/{execution_arn}"
    )


@dataclass(frozen=True)
class StepFunctionsMachines:
    client: SFNClient
    _: KW_ONLY
    queue_url: str
    role_arn: str
    region: str
    prefix: str
    log_group_arn: str | None

    @classmethod
    def from_settings(cls, settings: Settings) -> StepFunctionsMachines:
        if not settings.workflow_queue_url or not settings.workflow_role_arn:
            raise ValueError("Step Functions workflows need the dispatch queue and the role")
        return cls(
            boto3.client("stepfunctions", region_name=settings.region),
            queue_url=settings.workflow_queue_url,
            role_arn=settings.workflow_role_arn,
            region=settings.region,
            prefix=settings.workflow_machine_prefix,
            log_group_arn=settings.workflow_log_group_arn,
        )

    def machine_name(self, team: str, workflow: Workflow) -> str:
        # Names are account-wide: the team goes in as a hash (names allow 80 characters).
        team_hash = hashlib.sha256(team.encode()).hexdigest()[:10]
        return f"{self.prefix}-{team_hash}-{workflow.id}-v{workflow.version}"[:80]

    def ensure(self, team: str, workflow: Workflow, definition: WorkflowDefinition) -> str:
        document = json.dumps(
            compile_definition(
                definition,
                queue_url=self.queue_url,
                comment=f"cairn workflow {workflow.id} version {workflow.version}",
            )
        )
        kwargs: dict[str, Any] = {
            "name": self.machine_name(team, workflow),
            "definition": document,
            "roleArn": self.role_arn,
            "type": "STANDARD",
            "tracingConfiguration": {"enabled": True},
        }
        if self.log_group_arn:
            kwargs["loggingConfiguration"] = {
                "level": "ALL",
                "includeExecutionData": False,
                "destinations": [{"cloudWatchLogsLogGroup": {"logGroupArn": self.log_group_arn}}],
            }
        try:
            return self.client.create_state_machine(**kwargs)["stateMachineArn"]
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "StateMachineAlreadyExists":
                raise
        # The same version compiled before (a retried start): bring it up to date.
        arn = self._arn_of(kwargs["name"])
        self.client.update_state_machine(
            stateMachineArn=arn, definition=document, roleArn=self.role_arn
        )
        return arn

    def _arn_of(self, name: str) -> str:
        for page in self.client.get_paginator("list_state_machines").paginate():
            for machine in page["stateMachines"]:
                if machine["name"] == name:
                    return machine["stateMachineArn"]
        raise LookupError(f"state machine {name} vanished")

    def start(self, machine_arn: str, team: str, execution: Execution) -> tuple[str, str]:
        started = self.client.start_execution(
            stateMachineArn=machine_arn,
            name=execution.id,
            input=json.dumps(
                {"team": team, "execution_id": execution.id, "workflow_id": execution.workflow_id}
            ),
        )
        arn = started["executionArn"]
        return arn, console_url(self.region, arn)

    def succeed(self, task_token: str, output: dict[str, object]) -> None:
        self._answer(self.client.send_task_success, taskToken=task_token, output=json.dumps(output))

    def fail(self, task_token: str, error: str, cause: str) -> None:
        self._answer(
            self.client.send_task_failure,
            taskToken=task_token,
            error=error,
            cause=cause[:MAX_CAUSE],
        )

    def stop(self, execution_arn: str, cause: str) -> None:
        self._answer(self.client.stop_execution, executionArn=execution_arn, cause=cause)

    @staticmethod
    def _answer(call: Any, **kwargs: Any) -> None:
        try:
            call(**kwargs)
        except ClientError as exc:
            if exc.response["Error"]["Code"] not in _GONE:
                raise
