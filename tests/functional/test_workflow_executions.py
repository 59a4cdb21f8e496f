"""Workflow executions on the embedded default: the DAG, on_failure, pause, cancel, races,
team isolation and a restart mid-execution, with agents played by the test."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from shared.orchestrator.ports import ActiveAgent
from shared.orchestrator.tasks.adapters.sqlite import SqliteTaskStore
from shared.orchestrator.tasks.ports import TaskFinish
from shared.orchestrator.tasks.service import LEASE_SECONDS, TaskService
from shared.storage.sqlite import Database
from shared.tools.errors import Conflict, InvalidArgument, NotFound
from shared.workflows.adapters.sqlite import SqliteWorkflowStore
from shared.workflows.cron import next_fire
from shared.workflows.local import WorkflowWorker
from shared.workflows.models import WorkflowView
from shared.workflows.service import WorkflowService
from tests.functional.conftest import admin_agent as who

NOW = 1_800_000_000.0


class Everyone:
    """An agent directory in which every agent holds every capability, without limits."""

    def active_agent(self, team: str, agent_id: str) -> ActiveAgent | None:
        return ActiveAgent(frozenset({"plan", "code", "review", "write"}))


@dataclass
class System:
    """The task and workflow services of one process on one database file."""

    db: Database
    tasks: TaskService
    workflows: WorkflowService

    def run(
        self,
        name: str,
        agent: str = "coder",
        *,
        team: str = "alpha",
        fail: bool = False,
        output: str | None = None,
    ) -> str:
        """An agent polls, claims and finishes the open task of step `name`."""
        task = self.open_task(name, agent, team=team)
        principal = who(agent, team)
        self.tasks.claim(principal, task.id)
        self.tasks.start(principal, task.id)
        if fail:
            self.tasks.finish(principal, task.id, "failed", {"error_message": f"{name} broke"})
        else:
            summary = output if output is not None else f"{name} done"
            self.tasks.finish(principal, task.id, "completed", {"output_summary": summary})
        return task.id

    def open_task(self, name: str, agent: str = "coder", *, team: str = "alpha") -> Any:
        offered = [t for t in self.tasks.poll(who(agent, team), limit=50) if t.name == name]
        assert len(offered) == 1, f"step {name} offers {len(offered)} tasks"
        return offered[0]

    def offered(self, team: str = "alpha") -> list[str]:
        return sorted(t.name for t in self.tasks.poll(who("coder", team), limit=50))


def open_system(path: Path, clock: list[float]) -> System:
    db = Database(path / "cairn.db")
    store = SqliteTaskStore(db)
    tasks = TaskService(store, Everyone(), clock=lambda: clock[0])
    workflows = WorkflowService(SqliteWorkflowStore(db), store, clock=lambda: clock[0])
    tasks.on_finish(workflows.task_finished)
    return System(db, tasks, workflows)


@pytest.fixture
def clock() -> list[float]:
    return [NOW]


@pytest.fixture
def system(tmp_path: Path, clock: list[float]) -> Iterator[System]:
    opened = open_system(tmp_path, clock)
    yield opened
    opened.db.close()


def create(
    system: System, steps: list[dict[str, Any]], name: str = "flow", team: str = "alpha"
) -> WorkflowView:
    return system.workflows.create(
        who("boss", team),
        name=name,
        description=None,
        definition={"steps": steps},
        trigger_type="manual",
        trigger_config={},
        tags=[],
    )


def status(system: System, workflow_id: str, team: str = "alpha") -> WorkflowView:
    view = system.workflows.get(who("boss", team), workflow_id)
    assert view is not None
    return view


def steps_of(view: WorkflowView) -> dict[str, str]:
    assert view.execution is not None
    return {step.name: step.status for step in view.execution.steps}


DIAMOND = [
    {"name": "plan", "requires_capability": "plan", "inputs": {"topic": "${inputs.topic}"}},
    {"name": "left", "depends_on": ["plan"], "inputs": {"plan": "${steps.plan.output}"}},
    {"name": "right", "depends_on": ["plan"], "inputs": {"note": "from ${steps.plan.agent}"}},
    {
        "name": "join",
        "depends_on": ["left", "right"],
        "inputs": {"both": ["${steps.left.output}", "${steps.right.output}"]},
    },
]


def test_a_linear_workflow_runs_its_steps_in_order_and_completes(system: System) -> None:
    flow = create(
        system,
        [
            {"name": "a"},
            {"name": "b", "depends_on": ["a"]},
            {"name": "c", "depends_on": ["b"]},
        ],
    )
    started = system.workflows.start(who("boss"), flow.id, {})

    assert started.status == "running"
    assert system.offered() == ["a"]
    system.run("a")
    assert system.offered() == ["b"]
    system.run("b")
    system.run("c")

    done = status(system, flow.id)
    assert done.status == "completed"
    assert steps_of(done) == {"a": "completed", "b": "completed", "c": "completed"}
    assert done.execution is not None
    assert done.execution.outputs["c"].output == "c done"


def test_a_diamond_fans_out_then_joins_passing_outputs_along(system: System) -> None:
    flow = create(system, DIAMOND)
    system.workflows.start(who("boss"), flow.id, {"topic": "caching"})

    plan = system.open_task("plan")
    assert plan.input_data == {"topic": "caching"}
    system.run("plan", agent="planner", output="use redis")
    assert system.offered() == ["left", "right"]
    assert system.open_task("left").input_data == {"plan": "use redis"}
    assert system.open_task("right").input_data == {"note": "from planner"}
    system.run("right", output="R")
    assert system.offered() == ["left"]  # join waits for both
    system.run("left", output="L")
    assert system.open_task("join").input_data == {"both": ["L", "R"]}
    system.run("join")

    done = status(system, flow.id)
    assert done.status == "completed"
    assert done.execution is not None
    plan_view = next(s for s in done.execution.steps if s.name == "plan")
    assert plan_view.agent == "planner"
    assert plan_view.task_id == plan.id
    assert plan_view.started_at is not None
    assert plan_view.ended_at is not None


def test_a_failing_step_under_fail_fails_the_workflow_and_cancels_the_rest(
    system: System,
) -> None:
    flow = create(
        system,
        [
            {"name": "a"},
            {"name": "b"},
            {"name": "c", "depends_on": ["a", "b"]},
        ],
    )
    system.workflows.start(who("boss"), flow.id, {})
    b_task = system.open_task("b")

    system.run("a", fail=True)

    done = status(system, flow.id)
    assert done.status == "failed"
    assert steps_of(done) == {"a": "failed", "b": "cancelled", "c": "skipped"}
    assert done.execution is not None
    assert "a broke" in (done.execution.error or "")
    assert system.tasks.get(who("boss"), b_task.id).status == "cancelled"  # type: ignore[union-attr]
    assert system.offered() == []


def test_a_failing_step_under_continue_lets_its_dependents_run(system: System) -> None:
    flow = create(
        system,
        [
            {"name": "a", "on_failure": "continue"},
            {"name": "b", "depends_on": ["a"], "inputs": {"why": "${steps.a.error}"}},
        ],
    )
    system.workflows.start(who("boss"), flow.id, {})

    system.run("a", fail=True)
    assert system.open_task("b").input_data == {"why": "a broke"}
    system.run("b")

    done = status(system, flow.id)
    assert done.status == "completed"
    assert steps_of(done) == {"a": "failed", "b": "completed"}


def test_a_failing_step_under_retry_gets_new_tasks_until_its_retries_run_out(
    system: System,
) -> None:
    flow = create(system, [{"name": "a", "on_failure": "retry", "max_retries": 2}])
    system.workflows.start(who("boss"), flow.id, {})

    first = system.run("a", fail=True)
    second = system.run("a", fail=True)
    assert first != second
    assert status(system, flow.id).status == "running"
    system.run("a", fail=True)  # the third attempt: no retry left

    done = status(system, flow.id)
    assert done.status == "failed"
    assert done.execution is not None
    assert done.execution.steps[0].attempt == 3


def test_a_retried_step_that_then_succeeds_completes_the_workflow(system: System) -> None:
    flow = create(system, [{"name": "a", "on_failure": "retry", "max_retries": 1}])
    system.workflows.start(who("boss"), flow.id, {})

    system.run("a", fail=True)
    system.run("a")

    assert status(system, flow.id).status == "completed"


def test_pause_holds_new_steps_while_a_step_in_flight_finishes_and_resume_releases_them(
    system: System,
) -> None:
    flow = create(system, DIAMOND)
    system.workflows.start(who("boss"), flow.id, {"topic": "t"})
    plan = system.open_task("plan")
    system.tasks.claim(who("coder"), plan.id)

    paused = system.workflows.pause(who("boss"), flow.id)
    system.tasks.finish(who("coder"), plan.id, "completed", {"output_summary": "p"})

    assert paused.status == "paused"
    held = status(system, flow.id)
    assert steps_of(held) == {
        "plan": "completed",
        "left": "held",
        "right": "held",
        "join": "waiting",
    }
    assert system.offered() == []
    with pytest.raises(Conflict, match="already paused"):
        system.workflows.pause(who("boss"), flow.id)

    system.workflows.resume(who("boss"), flow.id)
    assert system.offered() == ["left", "right"]
    system.run("left")
    system.run("right")
    system.run("join")
    assert status(system, flow.id).status == "completed"


def test_cancel_stops_the_workflow_and_cancels_its_open_tasks(system: System) -> None:
    flow = create(system, DIAMOND)
    system.workflows.start(who("boss"), flow.id, {})
    system.run("plan")
    left = system.open_task("left")
    system.tasks.claim(who("coder"), left.id)

    cancelled = system.workflows.cancel(who("boss"), flow.id)

    assert cancelled.status == "cancelled"
    assert steps_of(cancelled) == {
        "plan": "completed",
        "left": "cancelled",
        "right": "cancelled",
        "join": "skipped",
    }
    assert system.offered() == []
    with pytest.raises(Conflict):  # the agent holding `left` can no longer complete it
        system.tasks.finish(who("coder"), left.id, "completed", {})
    with pytest.raises(Conflict, match="no running or paused execution"):
        system.workflows.cancel(who("boss"), flow.id)


def test_two_agents_racing_for_one_step_give_it_to_exactly_one(system: System) -> None:
    flow = create(system, [{"name": "a"}, {"name": "b", "depends_on": ["a"]}])
    system.workflows.start(who("boss"), flow.id, {})
    task = system.open_task("a")
    barrier = threading.Barrier(2)
    winners: list[str] = []
    losers: list[str] = []

    def race(agent: str) -> None:
        barrier.wait()
        try:
            system.tasks.claim(who(agent), task.id)
            winners.append(agent)
        except Conflict:
            losers.append(agent)

    threads = [threading.Thread(target=race, args=(a,)) for a in ("ann", "bob")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(winners) == 1
    assert len(losers) == 1
    with pytest.raises(Conflict):
        system.tasks.finish(who(losers[0]), task.id, "completed", {})
    system.tasks.finish(who(winners[0]), task.id, "completed", {"output_summary": "won"})
    view = status(system, flow.id)
    assert view.execution is not None
    assert view.execution.steps[0].agent == winners[0]
    assert system.offered() == ["b"]


def test_a_dead_agents_step_goes_to_the_next_claimer_through_the_task_lease(
    system: System, clock: list[float]
) -> None:
    # The task's lease and requeue decide who runs a step: once ann's lease runs out (she
    # died holding it), bob's claim takes the same task over, ann's late completion is refused,
    # and the workflow records bob's run. A lease running out is not the step's timeout.
    flow = create(
        system, [{"name": "a", "timeout_seconds": 7200}, {"name": "b", "depends_on": ["a"]}]
    )
    system.workflows.start(who("boss"), flow.id, {})
    task = system.open_task("a")
    system.tasks.claim(who("ann"), task.id)
    with pytest.raises(Conflict):  # a live lease is ann's
        system.tasks.claim(who("bob"), task.id)

    clock[0] += LEASE_SECONDS + 1
    system.workflows.sweep()
    assert system.open_task("a", "bob").id == task.id  # requeued, the same task: no new attempt
    system.tasks.claim(who("bob"), task.id)
    with pytest.raises(Conflict):
        system.tasks.finish(who("ann"), task.id, "completed", {"output_summary": "late"})
    system.tasks.finish(who("bob"), task.id, "completed", {"output_summary": "bob's"})

    view = status(system, flow.id)
    assert view.execution is not None
    step = view.execution.steps[0]
    assert (step.status, step.agent, step.attempt, step.task_id) == ("completed", "bob", 1, task.id)
    assert view.execution.outputs["a"].output == "bob's"
    assert system.offered() == ["b"]


def test_another_team_can_neither_see_nor_touch_the_workflow(system: System) -> None:
    flow = create(system, [{"name": "a"}])
    system.workflows.start(who("boss"), flow.id, {})
    outsider = who("mallory", team="beta")

    assert system.workflows.get(outsider, flow.id) is None
    assert system.workflows.list_workflows(outsider, status=None, limit=20) == []
    for action in (system.workflows.pause, system.workflows.resume, system.workflows.cancel):
        with pytest.raises(NotFound):
            action(outsider, flow.id)
    with pytest.raises(NotFound):
        system.workflows.start(outsider, flow.id, {})
    assert system.offered(team="beta") == []
    assert status(system, flow.id).status == "running"


def test_an_execution_survives_a_restart_in_the_middle(tmp_path: Path, clock: list[float]) -> None:
    first = open_system(tmp_path, clock)
    flow = create(first, DIAMOND)
    first.workflows.start(who("boss"), flow.id, {"topic": "x"})
    first.run("plan", output="P")
    first.run("left", output="L")
    first.db.close()

    second = open_system(tmp_path, clock)
    assert second.offered() == ["right"]
    second.run("right", output="R")
    assert second.open_task("join").input_data == {"both": ["L", "R"]}
    second.run("join")
    assert status(second, flow.id).status == "completed"
    second.db.close()


def test_a_finish_the_process_died_before_applying_is_applied_by_the_sweep(
    system: System,
) -> None:
    flow = create(system, [{"name": "a"}, {"name": "b", "depends_on": ["a"]}])
    system.workflows.start(who("boss"), flow.id, {})
    task = system.open_task("a")
    system.tasks.claim(who("coder"), task.id)
    # The store records the completion, the hook never runs (the process died in between).
    finish = TaskFinish("coder", 1, "completed", {"output_summary": "ok"}, system.tasks._now())
    system.tasks.store.finish("alpha", task.id, finish)
    assert system.offered() == []

    assert system.workflows.sweep() == 1
    assert system.offered() == ["b"]


def test_a_step_past_its_timeout_fails_under_its_on_failure(
    system: System, clock: list[float]
) -> None:
    flow = create(
        system, [{"name": "slow", "timeout_seconds": 60, "on_failure": "retry", "max_retries": 1}]
    )
    system.workflows.start(who("boss"), flow.id, {})
    first = system.open_task("slow")
    system.tasks.claim(who("coder"), first.id)

    clock[0] += 61
    system.workflows.sweep()

    assert system.tasks.get(who("boss"), first.id).status == "cancelled"  # type: ignore[union-attr]
    second = system.open_task("slow")
    assert second.id != first.id
    clock[0] += 61
    view = status(system, flow.id)  # a status read times it out too
    assert view.status == "failed"
    assert view.execution is not None
    assert "timed out" in (view.execution.error or "")


def test_a_new_version_leaves_the_running_execution_on_its_own(system: System) -> None:
    flow = create(system, [{"name": "a"}, {"name": "b", "depends_on": ["a"]}])
    system.workflows.start(who("boss"), flow.id, {})

    v2 = create(system, [{"name": "only"}])

    assert v2.id == flow.id
    assert v2.version == 2
    system.run("a")
    system.run("b")
    done = status(system, flow.id)
    assert done.status == "completed"
    assert done.execution is not None
    assert done.execution.version == 1
    system.workflows.start(who("boss"), flow.id, {})
    assert system.offered() == ["only"]


def test_start_is_refused_while_an_execution_is_open(system: System) -> None:
    flow = create(system, [{"name": "a"}])
    system.workflows.start(who("boss"), flow.id, {})
    with pytest.raises(Conflict, match="running"):
        system.workflows.start(who("boss"), flow.id, {})


@pytest.mark.parametrize(
    ("steps", "message"),
    [
        ([{"name": "a"}, {"name": "a"}], "step 'a' the name is used by another step"),
        ([{"name": "a", "depends_on": ["ghost"]}], "step 'a' depends_on names an unknown step"),
        (
            [{"name": "a", "depends_on": ["b"]}, {"name": "b", "depends_on": ["a"]}],
            "dependency cycle: a -> b -> a",
        ),
        ([{"name": f"s{i}"} for i in range(51)], "at most 50"),
        ([{"name": "a", "on_failure": "explode"}], "step 0 ('a') field `on_failure`"),
        (
            [{"name": "a"}, {"name": "b", "inputs": {"x": "${steps.a.output}"}}],
            "'a' is not a step it depends on",
        ),
        ([{"name": "a", "inputs": {"x": "${secrets.key}"}}], "unknown reference"),
        ([], "at least 1"),
    ],
)
def test_a_bad_definition_is_refused_naming_the_step_and_the_problem(
    system: System, steps: list[dict[str, Any]], message: str
) -> None:
    with pytest.raises(InvalidArgument, match="definition") as refused:
        create(system, steps)
    assert message in refused.value.message
    assert system.workflows.list_workflows(who("boss"), status=None, limit=20) == []


def test_list_filters_by_the_newest_execution_status(system: System) -> None:
    idle = create(system, [{"name": "a"}], name="idle")
    busy = create(system, [{"name": "a"}], name="busy")
    system.workflows.start(who("boss"), busy.id, {})

    running = system.workflows.list_workflows(who("boss"), status="running", limit=20)
    created = system.workflows.list_workflows(who("boss"), status="created", limit=20)
    assert [w.id for w in running] == [busy.id]
    assert [w.id for w in created] == [idle.id]


def test_a_rate_schedule_starts_the_workflow_each_period(
    system: System, clock: list[float]
) -> None:
    flow = system.workflows.create(
        who("boss"),
        name="nightly",
        description=None,
        definition={"steps": [{"name": "a", "inputs": {"day": "${inputs.day}"}}]},
        trigger_type="schedule",
        trigger_config={"expression": "rate(1 hour)", "inputs": {"day": "today"}},
        tags=[],
    )
    assert system.workflows.run_due_schedules("alpha") == []

    clock[0] += 3600
    assert system.workflows.run_due_schedules("alpha") == [flow.id]
    assert system.open_task("a").input_data == {"day": "today"}
    system.run("a")
    clock[0] += 1800
    assert system.workflows.run_due_schedules("alpha") == []
    clock[0] += 1800
    assert system.workflows.run_due_schedules("alpha") == [flow.id]


def test_a_cron_schedule_starts_the_workflow_when_it_fires_in_its_timezone(
    system: System, clock: list[float]
) -> None:
    # 09:00 in Berlin on weekdays (Scheduler's dialect: six fields, `?`, named days).
    flow = system.workflows.create(
        who("boss"),
        name="standup",
        description=None,
        definition={"steps": [{"name": "a"}]},
        trigger_type="schedule",
        trigger_config={"expression": "cron(0 9 ? * MON-FRI *)", "timezone": "Europe/Berlin"},
        tags=[],
    )
    created = datetime.fromtimestamp(clock[0], tz=UTC)
    berlin = ZoneInfo("Europe/Berlin")
    first = next_fire("cron(0 9 ? * MON-FRI *)", created, "Europe/Berlin")
    assert first is not None
    assert first.astimezone(berlin).hour == 9
    assert first.astimezone(berlin).weekday() < 5

    clock[0] = first.timestamp() - 60
    assert system.workflows.run_due_schedules("alpha") == []
    clock[0] = first.timestamp() + 1
    assert system.workflows.run_due_schedules("alpha") == [flow.id]
    system.run("a")
    assert system.workflows.run_due_schedules("alpha") == []  # not again until the next 09:00


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("cron(0 9 * * MON-FRI *)", "must be `?`"),
        ("cron(0 9 ? * MON-FRI)", "EventBridge Scheduler"),
        ("cron(0 25 ? * MON *)", "cron"),
        ("cron(0 9 ? * MON 2001)", "never fires again"),
    ],
)
def test_a_cron_schedule_scheduler_would_refuse_is_refused_at_create(
    system: System, expression: str, message: str
) -> None:
    with pytest.raises(InvalidArgument, match=message):
        system.workflows.create(
            who("boss"),
            name="bad",
            description=None,
            definition={"steps": [{"name": "a"}]},
            trigger_type="schedule",
            trigger_config={"expression": expression},
            tags=[],
        )


def test_oversized_definitions_and_inputs_are_refused_naming_the_field(system: System) -> None:
    huge = {"steps": [{"name": "a", "inputs": {"blob": "x" * 70_000}}]}
    with pytest.raises(InvalidArgument, match=r"`definition` is \d+ bytes") as refused:
        create(system, huge["steps"])
    assert refused.value.field == "definition"
    flow = create(system, [{"name": "a"}])
    with pytest.raises(InvalidArgument, match="`inputs`"):
        system.workflows.start(who("boss"), flow.id, {"blob": "x" * 70_000})
    assert status(system, flow.id).status == "created"


def test_a_long_step_output_is_clipped_in_the_execution_but_whole_on_the_task(
    system: System,
) -> None:
    flow = create(
        system,
        [{"name": "a"}, {"name": "b", "depends_on": ["a"], "inputs": {"x": "${steps.a.output}"}}],
    )
    system.workflows.start(who("boss"), flow.id, {})
    task_id = system.run("a", output="y" * 9_000)

    view = status(system, flow.id)
    assert view.execution is not None
    kept = view.execution.outputs["a"].output
    assert kept is not None
    assert len(kept) == 4_000
    assert kept.endswith("…")
    assert system.tasks.get(who("boss"), task_id).output_summary == "y" * 9_000  # type: ignore[union-attr]


def test_the_local_worker_fires_the_schedules_of_every_team(
    system: System, clock: list[float]
) -> None:
    # `make serve` hosts any number of teams: each one's schedules fire, not only `local`'s,
    # and a team whose first schedule appears while the worker runs is picked up at its next tick.
    def scheduled(team: str) -> WorkflowView:
        return system.workflows.create(
            who("boss", team),
            name="hourly",
            description=None,
            definition={"steps": [{"name": "a"}]},
            trigger_type="schedule",
            trigger_config={"expression": "rate(1 hour)"},
            tags=[],
        )

    store = SqliteWorkflowStore(system.db)
    worker = WorkflowWorker(system.workflows, store.schedule_teams)
    alpha = scheduled("alpha")
    create(system, [{"name": "m"}], name="manual-only", team="gamma")
    assert store.schedule_teams() == ["alpha"]
    assert worker.tick() == []

    beta = scheduled("beta")
    clock[0] += 3600
    assert sorted(worker.tick()) == sorted([alpha.id, beta.id])
    assert status(system, alpha.id).status == "running"
    assert status(system, beta.id, team="beta").status == "running"
    assert system.offered("beta") == ["a"]
    assert worker.tick() == []  # open executions are not started twice
