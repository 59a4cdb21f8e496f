"""Seed 000's task lifecycle on moto: claims are leases, completions are fenced."""

from __future__ import annotations

import threading
from typing import Any

import boto3
import pytest

from shared.config import names
from shared.config.settings import Settings
from shared.orchestrator.ports import ActiveAgent
from shared.orchestrator.tasks.adapters import DynamoTaskStore
from shared.orchestrator.tasks.models import TaskDelegateInput, TaskListInput
from shared.orchestrator.tasks.service import LEASE_SECONDS, TaskService
from shared.tools.errors import Conflict, InvalidArgument, NotFound
from tests.functional.conftest import Harness
from tests.functional.conftest import admin_agent as agent
from tests.jsonrpc import tools_call

NOW = 1_800_000_000.0


class Directory:
    """The agent registry as the task service sees it (`AgentDirectory`)."""

    def __init__(
        self, capabilities: dict[str, frozenset[str]], limits: dict[str, int] | None = None
    ) -> None:
        self._capabilities = capabilities
        self._limits = limits or {}
        self.reads = 0

    def active_agent(self, team: str, agent_id: str) -> ActiveAgent | None:
        self.reads += 1
        name = f"{team}/{agent_id}"
        if name not in self._capabilities and name not in self._limits:
            return None
        return ActiveAgent(self._capabilities.get(name, frozenset()), self._limits.get(name))


@pytest.fixture
def clock() -> list[float]:
    return [NOW]


@pytest.fixture
def tasks(aws: Settings, clock: list[float]) -> TaskService:
    table = boto3.resource("dynamodb").Table(aws.table(names.TABLE_COORDINATION))
    directory = Directory(
        {"alpha/coder": frozenset({"python"}), "alpha/writer": frozenset()},
        limits={"alpha/solo": 1},
    )
    return TaskService(DynamoTaskStore(table), directory, clock=lambda: clock[0])


def create(tasks: TaskService, **fields: Any) -> str:
    return tasks.create(agent("boss"), **{"name": "job", **fields}).id


def test_a_task_is_claimed_started_and_completed_by_one_agent(tasks: TaskService) -> None:
    task_id = create(tasks, input_data={"n": 3, "ratio": 0.5})

    claimed = tasks.claim(agent("coder"), task_id)
    tasks.start(agent("coder"), task_id)
    tasks.finish(
        agent("coder"),
        task_id,
        "completed",
        {"output_summary": "done", "estimated_cost_usd": 0.42, "tokens_input": 1200},
    )

    assert claimed.status == "claimed"
    assert claimed.claimed_by == "coder"
    assert claimed.fence == 1
    done = tasks.get(agent("boss"), task_id)
    assert done is not None
    assert done.status == "completed"
    assert done.input_data == {"n": 3, "ratio": 0.5}
    assert done.estimated_cost_usd == 0.42
    assert done.tokens_input == 1200
    assert tasks.poll(agent("coder"), limit=10) == []


def test_an_expired_lease_returns_the_task_and_fences_out_the_stale_holder(
    tasks: TaskService, clock: list[float]
) -> None:
    task_id = create(tasks)
    tasks.claim(agent("slow"), task_id)
    with pytest.raises(Conflict):
        tasks.claim(agent("fast"), task_id)

    clock[0] += LEASE_SECONDS + 1
    assert [t.id for t in tasks.poll(agent("fast"), limit=5)] == [task_id]
    reclaimed = tasks.claim(agent("fast"), task_id)

    assert reclaimed.fence == 2
    with pytest.raises(Conflict, match="not claimed by you"):
        tasks.finish(agent("slow"), task_id, "completed", {})
    tasks.finish(agent("fast"), task_id, "completed", {})
    done = tasks.get(agent("boss"), task_id)
    assert done is not None
    assert done.claimed_by == "fast"


def test_start_needs_a_live_claim_of_the_caller(tasks: TaskService, clock: list[float]) -> None:
    task_id = create(tasks)
    with pytest.raises(Conflict):
        tasks.start(agent("coder"), task_id)
    tasks.claim(agent("coder"), task_id)
    with pytest.raises(Conflict, match="not claimed by you"):
        tasks.start(agent("writer"), task_id)
    clock[0] += LEASE_SECONDS + 1
    with pytest.raises(Conflict, match="lease has expired"):
        tasks.start(agent("coder"), task_id)


def test_poll_orders_by_priority_then_age_and_matches_capabilities(
    tasks: TaskService, clock: list[float]
) -> None:
    low = create(tasks, name="low", priority=-5)
    clock[0] += 1
    first = create(tasks, name="first")
    clock[0] += 1
    second = create(tasks, name="second")
    clock[0] += 1
    urgent = create(tasks, name="urgent", priority=10)
    python = create(tasks, name="python", requires_capability="python")

    coder = [t.id for t in tasks.poll(agent("coder"), limit=10)]
    writer = [t.id for t in tasks.poll(agent("writer"), limit=10)]

    assert coder == [urgent, first, second, python, low]
    assert writer == [urgent, first, second, low]
    with pytest.raises(InvalidArgument, match="requires capability 'python'"):
        tasks.claim(agent("writer"), python)
    assert [t.id for t in tasks.poll(agent("coder"), limit=2)] == [urgent, first]


def test_an_agent_holds_at_most_its_max_concurrent_tasks(
    tasks: TaskService, clock: list[float]
) -> None:
    first = create(tasks)
    second = create(tasks)
    tasks.claim(agent("solo"), first)

    with pytest.raises(Conflict, match="max_concurrent_tasks") as full:
        tasks.claim(agent("solo"), second)
    assert full.value.holder == {"held": [first]}

    tasks.finish(agent("solo"), first, "completed", {})
    assert tasks.claim(agent("solo"), second).claimed_by == "solo"
    # A lease that ran out no longer counts against the agent.
    clock[0] += LEASE_SECONDS + 1
    third = create(tasks)
    assert tasks.claim(agent("solo"), third).claimed_by == "solo"


def test_a_claim_reads_the_agent_once_for_its_capability_and_its_limit(
    aws: Settings, clock: list[float]
) -> None:
    table = boto3.resource("dynamodb").Table(aws.table(names.TABLE_COORDINATION))
    directory = Directory({"alpha/coder": frozenset({"python"})}, limits={"alpha/coder": 2})
    tasks = TaskService(DynamoTaskStore(table), directory, clock=lambda: clock[0])
    task_id = create(tasks, requires_capability="python")

    assert tasks.claim(agent("coder"), task_id).claimed_by == "coder"
    assert directory.reads == 1


def test_a_dependent_task_waits_until_its_dependencies_complete(tasks: TaskService) -> None:
    build = create(tasks, name="build")
    deploy = create(tasks, name="deploy", depends_on=[{"task_id": build}])

    assert [t.id for t in tasks.poll(agent("coder"), limit=10)] == [build]
    with pytest.raises(Conflict, match="waits on unfinished") as waiting:
        tasks.claim(agent("coder"), deploy)
    assert waiting.value.holder == {"waiting_on": [build]}

    tasks.claim(agent("coder"), build)
    tasks.finish(agent("coder"), build, "completed", {})

    assert [t.id for t in tasks.poll(agent("coder"), limit=10)] == [deploy]


def test_depends_on_an_unknown_task_is_refused_naming_the_field(tasks: TaskService) -> None:
    with pytest.raises(InvalidArgument) as refused:
        create(tasks, depends_on=[{"task_id": "tsk_nope"}])
    assert refused.value.field == "depends_on"


def test_fail_and_cancel_close_tasks_and_repeat_transitions_are_refused(
    tasks: TaskService,
) -> None:
    failing = create(tasks)
    cancelled = create(tasks)
    tasks.claim(agent("coder"), failing)

    tasks.finish(agent("coder"), failing, "failed", {"error_message": "boom"})
    tasks.cancel(agent("boss"), cancelled, "not needed")

    assert tasks.get(agent("boss"), failing).error_message == "boom"  # type: ignore[union-attr]
    assert tasks.get(agent("boss"), cancelled).cancel_reason == "not needed"  # type: ignore[union-attr]
    with pytest.raises(Conflict, match="already cancelled"):
        tasks.cancel(agent("boss"), cancelled, None)
    with pytest.raises(Conflict, match="is failed"):
        tasks.claim(agent("coder"), failing)
    assert tasks.poll(agent("coder"), limit=10) == []


def test_delegate_creates_a_subtask_in_the_parents_workflow(tasks: TaskService) -> None:
    parent = create(tasks, workflow_id="wf_1")

    child = tasks.delegate(
        agent("coder"),
        TaskDelegateInput.model_validate(
            {"parent_task_id": parent, "name": "sub", "description": "part"}
        ),
    )

    assert child.parent_task_id == parent
    assert child.workflow_id == "wf_1"
    assert child.created_by == "coder"
    with pytest.raises(NotFound):
        tasks.delegate(
            agent("coder"),
            TaskDelegateInput.model_validate({"parent_task_id": "tsk_nope", "name": "x"}),
        )


def test_list_filters_by_status_workflow_and_agent(tasks: TaskService, clock: list[float]) -> None:
    a = create(tasks, workflow_id="wf_1")
    clock[0] += 1
    b = create(tasks, workflow_id="wf_2")
    tasks.claim(agent("coder"), b)

    def ids(**filters: Any) -> list[str]:
        found = tasks.list_tasks(agent("boss"), TaskListInput.model_validate(filters))
        return [t.id for t in found]

    assert ids() == [b, a]
    assert ids(status="pending") == [a]
    assert ids(workflow_id="wf_2") == [b]
    assert ids(agent_id="coder") == [b]


def test_another_team_can_neither_see_nor_claim_a_task(tasks: TaskService) -> None:
    task_id = create(tasks)
    outsider = agent("coder", team="beta")

    assert tasks.get(outsider, task_id) is None
    assert tasks.poll(outsider, limit=10) == []
    with pytest.raises(NotFound):
        tasks.claim(outsider, task_id)
    with pytest.raises(NotFound):
        tasks.cancel(outsider, task_id, None)


# -- Through the gateway (tool shapes, scopes, a race under local mode's serialization) -------


def test_task_tools_round_trip_with_the_seed_shapes(harness: Harness) -> None:
    boss = harness.token(team="alpha", scopes=("task.create", "task.read", "task.manage"))
    worker = harness.token(team="alpha", agent_id="w1", scopes=("task.claim", "task.execute"))

    created = harness.call(boss, "task.create", {"name": "build", "priority": 3})
    task_id = created["id"]
    polled = harness.call(worker, "task.poll", {"limit": 5})
    claimed = harness.call(worker, "task.claim", {"task_id": task_id})
    started = harness.call(worker, "task.start", {"task_id": task_id})
    completed = harness.call(worker, "task.complete", {"task_id": task_id, "output_summary": "ok"})
    fetched = harness.call(boss, "task.get", {"task_id": task_id})
    missing = harness.call(boss, "task.get", {"task_id": "tsk_nope"})
    listed = harness.call(boss, "task.list", {"status": "completed"})

    assert created["status"] == "pending"
    assert [t["id"] for t in polled["tasks"]] == [task_id]
    assert claimed["task"]["claimed_by"] == "w1"
    assert started["success"] is True
    assert completed["success"] is True
    assert fetched["task"]["output_summary"] == "ok"
    assert missing["task"] is None
    assert [t["id"] for t in listed["tasks"]] == [task_id]


def test_concurrent_claims_through_the_gateway_have_exactly_one_winner(harness: Harness) -> None:
    boss = harness.token(team="alpha")
    task_id = harness.call(boss, "task.create", {"name": "race"})["id"]
    workers = [harness.token(team="alpha", agent_id=f"w{i}") for i in range(8)]
    results: list[dict[str, Any]] = []
    barrier = threading.Barrier(len(workers))

    def claim(token: str) -> None:
        barrier.wait()
        results.append(harness.call(token, "task.claim", {"task_id": task_id}))

    threads = [threading.Thread(target=claim, args=(t,)) for t in workers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    winners = [r for r in results if not r["isError"]]
    losers = [r for r in results if r["isError"]]
    assert len(winners) == 1
    assert {r["error"]["status"] for r in losers} == {409}
    holder = winners[0]["task"]["claimed_by"]
    assert {r["error"]["holder"]["claimed_by"] for r in losers} == {holder}


def test_a_token_without_task_execute_cannot_complete(harness: Harness) -> None:
    reader = harness.token(team="alpha", scopes=("task.read",))

    reply = harness.post(
        tools_call("task.complete", {"task_id": "tsk_x"}),
        reader,
    )

    assert reply.status == 403
    assert reply.body is not None
    assert reply.body["error"]["message"] == "Token missing required scope: task.execute"


def test_a_registered_agent_is_held_to_its_limit_through_the_gateway(harness: Harness) -> None:
    registrar = harness.token(team="alpha", scopes=("agent.register",))
    boss = harness.token(team="alpha")
    registered = harness.call(
        registrar,
        "agent.register",
        {"name": "solo", "agent_type": "codex", "max_concurrent_tasks": 1},
    )
    agent_token = registered["token"]
    first = harness.call(boss, "task.create", {"name": "one"})["id"]
    second = harness.call(boss, "task.create", {"name": "two"})["id"]

    claimed = harness.call(agent_token, "task.claim", {"task_id": first})
    refused = harness.call(agent_token, "task.claim", {"task_id": second})

    assert claimed["isError"] is False
    assert refused["isError"] is True
    assert refused["error"]["status"] == 409
    assert "max_concurrent_tasks" in refused["error"]["message"]
