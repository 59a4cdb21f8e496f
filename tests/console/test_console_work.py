"""The console's work view in-process: handoffs, tasks with holder and lease, a workflow's step
timeline and the cost chart against the budget — all read through the tools."""

from __future__ import annotations

import re

from shared import runtime
from shared.config.settings import Settings
from tests.console.conftest import HANDOFF, Console
from tests.functional.conftest import ok

TWO_STEPS = {"steps": [{"name": "draft"}, {"name": "review", "depends_on": ["draft"]}]}


def test_the_work_view_shows_handoffs_tasks_workflows_and_cost_against_the_budget(
    console: Console, aws: Settings
) -> None:
    runtime.configure(aws.model_copy(update={"cost_budget_usd": 4.0}))
    harness = console.harness
    boss = harness.token(team="alpha")
    worker = harness.token(team="alpha", agent_id="builder-1")
    ok(harness, boss, "store_handoff", {"title": "Billing cron migration", "document_md": HANDOFF})
    task_id = ok(harness, boss, "task.create", {"name": "compile the docs"})["id"]
    ok(harness, worker, "task.claim", {"task_id": task_id})
    flow = ok(harness, boss, "workflow.create", {"name": "blog post", "definition": TWO_STEPS})
    ok(harness, boss, "workflow.start", {"workflow_id": flow["workflow"]["id"]})
    ok(
        harness,
        worker,
        "cost.report",
        {
            "agent_id": "builder-1",
            "model": "opus",
            "provider": "anthropic",
            "estimated_cost_usd": 5.0,
        },
    )
    console.sign_in(boss)

    page = console.client.get("/console/work").text

    assert "Billing cron migration" in page
    claimed = page[page.index("<h3>claimed") : page.index("<h3>running")]
    assert "compile the docs" in claimed
    assert "builder-1" in claimed  # the holder
    assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", claimed)  # its lease
    assert "blog post" in page
    assert page.index(">draft<") < page.index(">review<")  # the step timeline, in order
    assert "$5.00 spent of a $4.00 budget — over budget" in page
    assert 'class="over" width="100.0"' in page
    assert 'class="budget" width="80.0"' in page


def test_a_token_without_task_or_cost_scopes_sees_why_not(console: Console) -> None:
    console.sign_in(console.harness.token(scopes=("memory",)))

    page = console.client.get("/console/work").text

    assert "Reading tasks needs the task.read scope, which this token does not have." in page
    assert "Reading costs needs the cost.read scope, which this token does not have." in page


def test_people_read_names_with_the_id_on_hover(console: Console, aws: Settings) -> None:
    harness = console.harness
    boss = harness.token(team="alpha")
    agent = ok(
        harness,
        boss,
        "agent.register",
        {"name": "release-captain-with-a-long-name", "agent_type": "codex"},
    )
    agent_id = agent["agent_id"]
    ci_bot = harness.token(team="alpha", scopes=("handoff",), name="ci-bot")
    ci_bot_id = harness.tokens.authenticate(ci_bot)[0].token_id
    ok(harness, ci_bot, "store_handoff", {"title": "Nightly build", "document_md": HANDOFF})
    task_id = ok(harness, boss, "task.create", {"name": "cut the release"})["id"]
    ok(harness, agent["token"], "task.claim", {"task_id": task_id})
    ok(
        harness,
        agent["token"],
        "cost.report",
        {"agent_id": agent_id, "model": "opus", "provider": "anthropic", "estimated_cost_usd": 1.5},
    )
    console.sign_in(boss)

    page = console.client.get("/console/work").text

    named = f'<span class="actor" title="{agent_id}">release-captain-with-a-long-name</span>'
    claimed = page[page.index("<h3>claimed") : page.index("<h3>running")]
    assert f'<td data-label="Holder">{named}</td>' in claimed  # the task's holder
    assert f'<span class="bar-label">{named}</span>' in page  # its cost bar, label in full
    assert (
        f'<td data-label="By"><span class="actor" title="token:{ci_bot_id}">ci-bot</span></td>'
        in page
    )
    assert ">agt_" not in page
    assert ">token:" not in page
