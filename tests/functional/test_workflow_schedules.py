"""Schedule triggers in AWS: the workflow's EventBridge Scheduler schedule follows its newest
trigger, and a schedule firing (Scheduler invoking the workflows function) starts it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from functions.workflows.handler import handler
from shared import runtime
from shared.app.reactions import build_workflow_service
from shared.auth.principal import Principal
from shared.config.settings import Settings
from shared.workflows.adapters.scheduler import EventBridgeSchedules
from shared.workflows.models import TriggerType, WorkflowView
from shared.workflows.service import WorkflowService
from shared.workflows.wiring import FUNCTION_ARN_ENV
from tests.fake_aws import fake_aws

GROUP = "cairn-test-workflows"
ROLE = "arn:aws:iam::123456789012:role/cairn-workflow-scheduler"
FUNCTION = "arn:aws:lambda:us-east-1:123456789012:function:cairn-workflows"
STEPS = {"steps": [{"name": "report", "inputs": {"day": "${inputs.day}"}}]}


class _Context:
    function_name = "cairn-workflows"
    memory_limit_in_mb = 1024
    invoked_function_arn = FUNCTION
    aws_request_id = "req-schedule"


def boss() -> Principal:
    return Principal(team="alpha", token_id="tok_b", token_name="b", scopes=frozenset({"admin"}))


@pytest.fixture
def service(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[WorkflowService]:
    monkeypatch.setenv(FUNCTION_ARN_ENV, FUNCTION)
    with fake_aws():
        settings = Settings(
            environment="test",
            data_dir=tmp_path,
            workflow_schedule_group=GROUP,
            workflow_scheduler_role_arn=ROLE,
        )
        runtime.configure(settings)
        boto3.client("scheduler", region_name="us-east-1").create_schedule_group(Name=GROUP)
        yield build_workflow_service()
    runtime.configure(Settings())


def _create(
    service: WorkflowService, name: str, trigger_type: TriggerType, **trigger_config: Any
) -> WorkflowView:
    """Workflow `name` (STEPS, no description or tags) with this trigger, created by boss."""
    return service.create(
        boss(),
        name=name,
        description=None,
        definition=STEPS,
        trigger_type=trigger_type,
        trigger_config=trigger_config,
        tags=[],
    )


def _schedule(workflow_id: str) -> dict[str, object]:
    return dict(
        boto3.client("scheduler").get_schedule(
            Name=EventBridgeSchedules.schedule_name("alpha", workflow_id), GroupName=GROUP
        )
    )


def test_a_schedule_trigger_creates_a_schedule_that_starts_the_workflow(
    service: WorkflowService,
) -> None:
    created = _create(
        service, "daily", "schedule", expression="cron(0 9 * * ? *)", inputs={"day": "mon"}
    )
    schedule = _schedule(created.id)
    assert schedule["ScheduleExpression"] == "cron(0 9 * * ? *)"
    target = schedule["Target"]
    assert isinstance(target, dict)
    assert target["Arn"] == FUNCTION
    assert target["RoleArn"] == ROLE
    event = json.loads(target["Input"])

    assert handler(event, _Context()) == {"started": True}  # type: ignore[arg-type]
    running = service.get(boss(), created.id)
    assert running is not None
    assert running.status == "running"
    assert running.execution is not None
    assert running.execution.inputs == {"day": "mon"}
    assert running.execution.started_by == "schedule"
    # Fired again while the execution runs: left alone.
    assert handler(event, _Context()) == {"started": False}  # type: ignore[arg-type]


def test_a_new_manual_version_removes_the_schedule(service: WorkflowService) -> None:
    created = _create(service, "hourly", "schedule", expression="rate(1 hour)")
    event = json.loads(_schedule(created.id)["Target"]["Input"])  # type: ignore[index]
    _create(service, "hourly", "manual")

    with pytest.raises(Exception, match="ResourceNotFound"):
        _schedule(created.id)
    assert handler(event, _Context()) == {"started": False}  # type: ignore[arg-type]
