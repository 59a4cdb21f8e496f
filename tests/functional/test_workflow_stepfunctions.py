"""The compiled ASL, run end to end on moto's Step Functions executor with the callback path:
state machine → SQS (waitForTaskToken) → the dispatcher handler → an agent task → task.complete
/ task.fail → SendTaskSuccess / SendTaskFailure → the next level. The ASL AWS runs is the ASL
tested here."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
import pytest

from functions.workflow_dispatcher.handler import handler as dispatcher
from shared import runtime
from shared.app.reactions import build_workflow_service
from shared.config.settings import Settings
from shared.orchestrator.events.wiring import build_event_log
from shared.orchestrator.ports import ActiveAgent
from shared.orchestrator.tasks.service import TaskService
from shared.orchestrator.tasks.wiring import build_task_store
from shared.workflows.models import WorkflowView
from shared.workflows.service import WorkflowService
from tests.fake_aws import fake_aws
from tests.functional.conftest import admin_agent as who

ROLE = "arn:aws:iam::123456789012:role/cairn-workflows"


class Everyone:
    def active_agent(self, team: str, agent_id: str) -> ActiveAgent | None:
        return ActiveAgent(frozenset({"plan", "code"}))


class _Context:
    function_name = "cairn-workflow-dispatcher"
    memory_limit_in_mb = 512
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:dispatcher"
    aws_request_id = "req-dispatch"


@dataclass
class Cloud:
    queue_url: str
    workflows: WorkflowService
    tasks: TaskService

    def pump(self, until: Callable[[], bool], timeout: float = 30.0) -> None:
        """Feed the dispatch queue's messages to the dispatcher handler until `until()`."""
        sqs = boto3.client("sqs")
        deadline = time.monotonic() + timeout
        while not until():
            assert time.monotonic() < deadline, "the state machine did not get there in time"
            got = sqs.receive_message(
                QueueUrl=self.queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=0
            )
            records = [
                {
                    "messageId": m["MessageId"],
                    "receiptHandle": m["ReceiptHandle"],
                    "body": m["Body"],
                    "attributes": {},
                    "messageAttributes": {},
                    "eventSource": "aws:sqs",
                    "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:dispatch",
                    "awsRegion": "us-east-1",
                }
                for m in got.get("Messages", [])
            ]
            if records:
                reply = dispatcher({"Records": records}, _Context())
                assert reply["batchItemFailures"] == []
                for message in got["Messages"]:
                    sqs.delete_message(
                        QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"]
                    )
            else:
                time.sleep(0.05)

    def offered(self) -> list[str]:
        return sorted(t.name for t in self.tasks.poll(who("coder"), limit=50))

    def has_tasks(self, *names: str) -> Callable[[], bool]:
        return lambda: set(names) <= set(self.offered())

    def run(self, name: str, *, agent: str = "coder", fail: bool = False, out: str = "") -> None:
        task = next(t for t in self.tasks.poll(who(agent), limit=50) if t.name == name)
        self.tasks.claim(who(agent), task.id)
        if fail:
            self.tasks.finish(who(agent), task.id, "failed", {"error_message": f"{name} broke"})
        else:
            self.tasks.finish(
                who(agent), task.id, "completed", {"output_summary": out or f"{name} done"}
            )

    def view(self, workflow_id: str) -> WorkflowView:
        found = self.workflows.get(who("boss"), workflow_id)
        assert found is not None
        return found

    def machine_status(self, workflow_id: str) -> str:
        view = self.view(workflow_id)
        assert view.execution is not None
        assert view.execution.execution_arn is not None
        return str(
            boto3.client("stepfunctions").describe_execution(
                executionArn=view.execution.execution_arn
            )["status"]
        )

    def machine_is(self, workflow_id: str, status: str) -> Callable[[], bool]:
        return lambda: self.machine_status(workflow_id) == status

    def create(self, steps: list[dict[str, Any]]) -> WorkflowView:
        return self.workflows.create(
            who("boss"),
            name="flow",
            description=None,
            definition={"steps": steps},
            trigger_type="manual",
            trigger_config={},
            tags=[],
        )


@pytest.fixture
def cloud(tmp_path: Path) -> Iterator[Cloud]:
    with fake_aws(config={"stepfunctions": {"execute_state_machine": True}}):
        queue_url = boto3.client("sqs", region_name="us-east-1").create_queue(
            QueueName="cairn-dispatch"
        )["QueueUrl"]
        settings = Settings(
            environment="test",
            data_dir=tmp_path,
            workflow_queue_url=queue_url,
            workflow_role_arn=ROLE,
        )
        runtime.configure(settings)
        workflows = build_workflow_service()
        tasks = TaskService(build_task_store(), Everyone())
        tasks.on_finish(workflows.task_finished)
        yield Cloud(queue_url, workflows, tasks)
    runtime.configure(Settings())


DIAMOND = [
    {"name": "plan", "inputs": {"topic": "${inputs.topic}"}},
    {"name": "left", "depends_on": ["plan"], "inputs": {"plan": "${steps.plan.output}"}},
    {"name": "right", "depends_on": ["plan"]},
    {
        "name": "join",
        "depends_on": ["left", "right"],
        "inputs": {"both": "${steps.left.output}+${steps.right.output}"},
    },
]


def test_a_diamond_runs_on_the_state_machine_through_the_callback_path(cloud: Cloud) -> None:
    flow = cloud.create(DIAMOND)
    started = cloud.workflows.start(who("boss"), flow.id, {"topic": "t"})
    assert started.execution is not None
    assert started.execution.console_url is not None
    assert "console.aws.amazon.com/states" in started.execution.console_url

    cloud.pump(cloud.has_tasks("plan"))
    cloud.run("plan", out="P")
    cloud.pump(cloud.has_tasks("left", "right"))  # one level: both in parallel
    left = next(t for t in cloud.tasks.poll(who("coder"), limit=50) if t.name == "left")
    assert left.input_data == {"plan": "P"}
    assert "task_token" not in json.dumps(left.input_data)  # the token never reaches agents
    cloud.run("left", out="L")
    cloud.run("right", out="R")
    cloud.pump(cloud.has_tasks("join"))
    join = next(t for t in cloud.tasks.poll(who("coder"), limit=50) if t.name == "join")
    assert join.input_data == {"both": "L+R"}
    cloud.run("join")

    cloud.pump(cloud.machine_is(flow.id, "SUCCEEDED"))
    assert cloud.view(flow.id).status == "completed"
    # The domain events of the Step Functions path (docs/events.md): started, a task per
    # step created by the dispatcher, succeeded once the machine's last callback landed.
    logged = build_event_log().read_after("alpha", datetime(2000, 1, 1, tzinfo=UTC), None, 500)
    kinds = [e.event_type for e in logged if e.event_type.startswith("cairn.workflow.")]
    assert kinds == ["cairn.workflow.started", "cairn.workflow.succeeded"]
    steps = [e for e in logged if e.event_type == "cairn.task.created"]
    assert len(steps) == len(DIAMOND)
    assert {e.payload["workflow_id"] for e in steps} == {flow.id}


def test_a_failing_step_fails_the_state_machine_and_continue_catches(cloud: Cloud) -> None:
    flow = cloud.create(
        [
            {"name": "soft", "on_failure": "continue"},
            {"name": "hard", "depends_on": ["soft"]},
        ]
    )
    cloud.workflows.start(who("boss"), flow.id, {})

    cloud.pump(cloud.has_tasks("soft"))
    cloud.run("soft", fail=True)
    cloud.pump(cloud.has_tasks("hard"))  # the Catch moved the machine on
    cloud.run("hard", fail=True)

    cloud.pump(cloud.machine_is(flow.id, "FAILED"))
    view = cloud.view(flow.id)
    assert view.status == "failed"
    assert view.execution is not None
    assert "hard broke" in (view.execution.error or "")


def test_a_retried_step_gets_a_new_task_on_the_same_callback(cloud: Cloud) -> None:
    flow = cloud.create([{"name": "flaky", "on_failure": "retry", "max_retries": 1}])
    cloud.workflows.start(who("boss"), flow.id, {})

    cloud.pump(cloud.has_tasks("flaky"))
    cloud.run("flaky", fail=True)
    assert cloud.offered() == ["flaky"]  # the second attempt, no new message needed
    cloud.run("flaky")

    cloud.pump(cloud.machine_is(flow.id, "SUCCEEDED"))
    assert cloud.view(flow.id).status == "completed"


def test_pause_holds_the_dispatched_step_and_cancel_stops_the_machine(cloud: Cloud) -> None:
    flow = cloud.create(
        [{"name": "a"}, {"name": "b", "depends_on": ["a"]}, {"name": "c", "depends_on": ["b"]}]
    )
    cloud.workflows.start(who("boss"), flow.id, {})
    cloud.pump(cloud.has_tasks("a"))

    cloud.workflows.pause(who("boss"), flow.id)
    cloud.run("a")  # in flight when paused: it completes

    def b_held() -> bool:
        view = cloud.view(flow.id)
        assert view.execution is not None
        return view.execution.steps[1].status == "held"

    cloud.pump(b_held)
    # The machine reached b's state and waits on its callback; the dispatcher made no task.
    assert cloud.machine_status(flow.id) == "RUNNING"
    assert cloud.offered() == []
    cloud.workflows.resume(who("boss"), flow.id)
    assert cloud.offered() == ["b"]
    cloud.run("b")  # answers the token held while paused: the machine moves on to c
    cloud.pump(cloud.has_tasks("c"))

    cancelled = cloud.workflows.cancel(who("boss"), flow.id)
    assert cancelled.status == "cancelled"
    assert cloud.offered() == []
    # In AWS StopExecution aborts at once. moto's executor does not abort a state waiting on a
    # callback: the service also answers the open step's token, which ends it there (FAILED).
    cloud.pump(lambda: cloud.machine_status(flow.id) in ("ABORTED", "FAILED"))


def _record(message_id: str, body: str) -> dict[str, Any]:
    return {
        "messageId": message_id,
        "receiptHandle": message_id,
        "body": body,
        "attributes": {},
        "messageAttributes": {},
        "eventSource": "aws:sqs",
        "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:dispatch",
        "awsRegion": "us-east-1",
    }


def test_the_dispatcher_makes_one_task_per_delivery_and_reports_bad_messages(
    cloud: Cloud,
) -> None:
    flow = cloud.create([{"name": "a"}])
    cloud.workflows.start(who("boss"), flow.id, {})
    sqs = boto3.client("sqs")
    deadline = time.monotonic() + 30
    messages: list[dict[str, Any]] = []
    while not messages:  # the machine's callback message for step a
        assert time.monotonic() < deadline, "the state machine sent no step message"
        messages = sqs.receive_message(QueueUrl=cloud.queue_url, WaitTimeSeconds=0).get(
            "Messages", []
        )
    body = messages[0]["Body"]
    unknown = json.dumps({**json.loads(body), "execution_id": "wfx_gone"})

    # SQS delivers at least once: the same message twice (in one batch and again later) is one
    # task; a malformed body and an unknown execution fail alone, to be retried then dead-lettered.
    reply = dispatcher(
        {
            "Records": [
                _record("m1", body),
                _record("m2", body),
                _record("m3", "{not json"),
                _record("m4", unknown),
            ]
        },
        _Context(),
    )
    assert sorted(f["itemIdentifier"] for f in reply["batchItemFailures"]) == ["m3", "m4"]
    again = dispatcher({"Records": [_record("m5", body)]}, _Context())
    assert again["batchItemFailures"] == []
    assert cloud.offered() == ["a"]
    tasks = cloud.tasks.poll(who("coder"), limit=50)
    assert len(tasks) == 1
    cloud.run("a")
    cloud.pump(cloud.machine_is(flow.id, "SUCCEEDED"))
