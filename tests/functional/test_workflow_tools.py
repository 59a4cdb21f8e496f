"""Seed 000's eight workflow.* tools through the gateway (DynamoDB on moto), with agents played
by the test through the task.* tools: scopes, team isolation and the orchestrator's finish hook
wired as in production."""

from __future__ import annotations

from typing import Any

import boto3

from shared.config.settings import Settings
from tests.functional.conftest import Harness

THREE_STEPS = {
    "steps": [
        {"name": "draft", "inputs": {"topic": "${inputs.topic}"}},
        {"name": "review", "depends_on": ["draft"], "inputs": {"text": "${steps.draft.output}"}},
        {"name": "publish", "depends_on": ["review"], "on_failure": "continue"},
    ]
}


def _ok(result: dict[str, object]) -> dict[str, Any]:
    assert result["isError"] is False, result
    return result


def _run(harness: Harness, agent: str, step: str, output: str) -> None:
    tasks = _ok(harness.call(agent, "task.poll", {}))["tasks"]
    (task,) = [t for t in tasks if t["name"] == step]
    _ok(harness.call(agent, "task.claim", {"task_id": task["id"]}))
    _ok(harness.call(agent, "task.start", {"task_id": task["id"]}))
    _ok(harness.call(agent, "task.complete", {"task_id": task["id"], "output_summary": output}))


def _create(harness: Harness, token: str, name: str, **more: object) -> dict[str, Any]:
    """workflow.create of THREE_STEPS under `name` (with `more` arguments): the workflow."""
    arguments = {"name": name, "definition": THREE_STEPS, **more}
    workflow: dict[str, Any] = _ok(harness.call(token, "workflow.create", arguments))["workflow"]
    return workflow


def test_a_three_step_workflow_runs_through_the_tools(harness: Harness) -> None:
    boss = harness.token(team="alpha")
    agent = harness.token(team="alpha", agent_id="writer")

    created = _create(harness, boss, "post", tags=["blog"])
    assert created["status"] == "created"
    assert created["version"] == 1
    started = _ok(
        harness.call(
            boss, "workflow.start", {"workflow_id": created["id"], "inputs": {"topic": "x"}}
        )
    )["workflow"]
    assert started["status"] == "running"

    _run(harness, agent, "draft", "first draft")
    polled = _ok(harness.call(agent, "task.poll", {}))["tasks"]
    assert [(t["name"], t["input_data"]) for t in polled] == [("review", {"text": "first draft"})]
    _run(harness, agent, "review", "looks good")
    _run(harness, agent, "publish", "published")

    status = _ok(harness.call(boss, "workflow.status", {"workflow_id": created["id"]}))["workflow"]
    assert status["status"] == "completed"
    steps = status["execution"]["steps"]
    assert [(s["name"], s["status"], s["agent"]) for s in steps] == [
        ("draft", "completed", "writer"),
        ("review", "completed", "writer"),
        ("publish", "completed", "writer"),
    ]
    assert all(s["task_id"] and s["started_at"] and s["ended_at"] for s in steps)
    assert status["execution"]["outputs"]["publish"]["output"] == "published"
    listed = _ok(harness.call(boss, "workflow.list", {"status": "completed"}))["workflows"]
    assert [w["id"] for w in listed] == [created["id"]]
    got = _ok(harness.call(boss, "workflow.get", {"workflow_id": created["id"]}))["workflow"]
    assert got["definition"]["steps"][2]["on_failure"] == "continue"


def test_pause_resume_and_cancel_through_the_tools(harness: Harness) -> None:
    boss = harness.token(team="alpha")
    agent = harness.token(team="alpha", agent_id="writer")
    flow = _ok(harness.call(boss, "workflow.create", {"name": "p", "definition": THREE_STEPS}))
    workflow_id = flow["workflow"]["id"]
    _ok(harness.call(boss, "workflow.start", {"workflow_id": workflow_id}))

    paused = _ok(harness.call(boss, "workflow.pause", {"workflow_id": workflow_id}))
    assert paused["workflow"]["status"] == "paused"
    _run(harness, agent, "draft", "d")  # in flight when paused: it finishes
    assert _ok(harness.call(agent, "task.poll", {}))["tasks"] == []
    resumed = _ok(harness.call(boss, "workflow.resume", {"workflow_id": workflow_id}))
    assert resumed["workflow"]["status"] == "running"
    assert [t["name"] for t in _ok(harness.call(agent, "task.poll", {}))["tasks"]] == ["review"]

    cancelled = _ok(harness.call(boss, "workflow.cancel", {"workflow_id": workflow_id}))
    assert cancelled["workflow"]["status"] == "cancelled"
    assert _ok(harness.call(agent, "task.poll", {}))["tasks"] == []
    again = harness.call(boss, "workflow.cancel", {"workflow_id": workflow_id})
    assert again["isError"] is True


SEED_SCOPES = {
    "workflow.create": "workflow.create",
    "workflow.start": "workflow.manage",
    "workflow.pause": "workflow.manage",
    "workflow.resume": "workflow.manage",
    "workflow.cancel": "workflow.manage",
    "workflow.status": "workflow.read",
    "workflow.get": "workflow.read",
    "workflow.list": "workflow.read",
}


def test_each_tool_needs_its_seed_scope(harness: Harness) -> None:
    # Each tool is refused for the missing scope itself (-32002 naming seed 000's scope), not
    # for some later error (a pause without an execution is a 409 too), and allowed with it.
    tokens = {
        scope: harness.token(team="alpha", scopes=(scope,))
        for scope in ("workflow.create", "workflow.manage", "workflow.read")
    }
    created = _ok(
        harness.call(
            tokens["workflow.create"], "workflow.create", {"name": "s", "definition": THREE_STEPS}
        )
    )
    workflow_id = created["workflow"]["id"]
    arguments: dict[str, dict[str, object]] = {
        "workflow.create": {"name": "s2", "definition": THREE_STEPS},
        "workflow.list": {},
    }

    for tool, needed in SEED_SCOPES.items():
        for scope, token in tokens.items():
            if scope == needed:
                continue
            reply = harness.post(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "tools/call",
                    "params": {
                        "name": tool,
                        "arguments": arguments.get(tool, {"workflow_id": workflow_id}),
                    },
                },
                token,
            )
            assert reply.body is not None
            assert reply.body.get("error", {}).get("code") == -32002, (tool, scope, reply.body)
            assert needed in reply.body["error"]["message"], (tool, reply.body)

    manage = tokens["workflow.manage"]
    for tool in ("workflow.start", "workflow.pause", "workflow.resume", "workflow.cancel"):
        _ok(harness.call(manage, tool, {"workflow_id": workflow_id}))
    for tool in ("workflow.status", "workflow.get"):
        assert (
            _ok(harness.call(tokens["workflow.read"], tool, {"workflow_id": workflow_id}))[
                "workflow"
            ]["id"]
            == workflow_id
        )
    assert _ok(harness.call(tokens["workflow.read"], "workflow.list", {}))["workflows"]


def test_a_team_b_token_can_neither_see_nor_touch_team_a_workflows(harness: Harness) -> None:
    alpha = harness.token(team="alpha")
    beta = harness.token(team="beta")
    beta_agent = harness.token(team="beta", agent_id="spy")
    created = _ok(harness.call(alpha, "workflow.create", {"name": "a", "definition": THREE_STEPS}))
    workflow_id = created["workflow"]["id"]
    _ok(harness.call(alpha, "workflow.start", {"workflow_id": workflow_id}))

    assert _ok(harness.call(beta, "workflow.get", {"workflow_id": workflow_id}))["workflow"] is None
    assert (
        _ok(harness.call(beta, "workflow.status", {"workflow_id": workflow_id}))["workflow"] is None
    )
    assert _ok(harness.call(beta, "workflow.list", {}))["workflows"] == []
    for tool in ("workflow.start", "workflow.pause", "workflow.resume", "workflow.cancel"):
        refused = harness.call(beta, tool, {"workflow_id": workflow_id})
        assert refused["isError"] is True, tool
    assert _ok(harness.call(beta_agent, "task.poll", {}))["tasks"] == []
    still = _ok(harness.call(alpha, "workflow.status", {"workflow_id": workflow_id}))
    assert still["workflow"]["status"] == "running"


def test_a_bad_definition_is_an_error_naming_the_step(harness: Harness) -> None:
    boss = harness.token(team="alpha")
    refused = harness.call(
        boss,
        "workflow.create",
        {"name": "bad", "definition": {"steps": [{"name": "a", "depends_on": ["zzz"]}]}},
    )
    assert refused["isError"] is True
    assert "step 'a' depends_on names an unknown step 'zzz'" in str(refused["content"])
    bad_trigger = harness.call(
        boss,
        "workflow.create",
        {
            "name": "cron",
            "definition": THREE_STEPS,
            "trigger_type": "schedule",
            "trigger_config": {"expression": "every day"},
        },
    )
    assert bad_trigger["isError"] is True
    assert "trigger_config.expression" in str(bad_trigger["content"])


def test_a_published_event_starts_the_workflows_its_type_triggers(harness: Harness) -> None:
    boss = harness.token(team="alpha")
    agent = harness.token(team="alpha", agent_id="writer")
    trigger = {"event_type": "deploy:finished"}
    on_event = _create(harness, boss, "on-deploy", trigger_type="event", trigger_config=trigger)
    _create(harness, boss, "manual")

    _ok(harness.call(boss, "event.publish", {"event_type": "deploy:started", "payload": {}}))
    assert _ok(harness.call(agent, "task.poll", {}))["tasks"] == []
    _ok(
        harness.call(
            boss, "event.publish", {"event_type": "deploy:finished", "payload": {"topic": "v2"}}
        )
    )

    status = _ok(harness.call(boss, "workflow.status", {"workflow_id": on_event["id"]}))
    assert status["workflow"]["status"] == "running"
    assert status["workflow"]["execution"]["inputs"] == {"topic": "v2"}
    (task,) = _ok(harness.call(agent, "task.poll", {}))["tasks"]
    assert task["input_data"] == {"topic": "v2"}
    other = _ok(harness.call(boss, "workflow.list", {"status": "created"}))["workflows"]
    assert [w["name"] for w in other] == ["manual"]


def test_list_takes_a_limit_newest_first_and_refuses_one_out_of_range(harness: Harness) -> None:
    boss = harness.token(team="alpha")
    ids = [
        _ok(harness.call(boss, "workflow.create", {"name": f"w{i}", "definition": THREE_STEPS}))[
            "workflow"
        ]["id"]
        for i in range(3)
    ]
    _ok(harness.call(boss, "workflow.start", {"workflow_id": ids[0]}))

    newest = _ok(harness.call(boss, "workflow.list", {"limit": 2}))["workflows"]
    assert [w["id"] for w in newest] == [ids[2], ids[1]]
    created = _ok(harness.call(boss, "workflow.list", {"status": "created", "limit": 1}))
    assert [w["id"] for w in created["workflows"]] == [ids[2]]
    running = _ok(harness.call(boss, "workflow.list", {"status": "running", "limit": 1}))
    assert [w["id"] for w in running["workflows"]] == [ids[0]]  # found past the first page
    for bad in (0, 101):
        refused = harness.call(boss, "workflow.list", {"limit": bad})
        assert refused["isError"] is True
        assert "`limit`" in str(refused["content"])


def test_a_step_passes_its_artifact_to_the_next_by_reference(
    harness: Harness, aws: Settings
) -> None:
    # `${steps.<name>.artifact}` is the output_artifact_id of the step's task: large results
    # travel as artifacts (artifact.put on the step's task), the next step reads the id and
    # fetches the bytes with artifact.get; the artifact carries the workflow's id.
    boto3.client("s3", region_name=aws.region).create_bucket(Bucket=aws.artifacts_bucket)
    boss = harness.token(team="alpha")
    agent = harness.token(team="alpha", agent_id="writer")
    definition = {
        "steps": [
            {"name": "build"},
            {
                "name": "ship",
                "depends_on": ["build"],
                "inputs": {
                    "bundle": "${steps.build.artifact}",
                    "note": "from ${steps.build.task_id}",
                },
            },
        ]
    }
    flow = _ok(harness.call(boss, "workflow.create", {"name": "art", "definition": definition}))
    workflow_id = flow["workflow"]["id"]
    _ok(harness.call(boss, "workflow.start", {"workflow_id": workflow_id}))
    (build,) = _ok(harness.call(agent, "task.poll", {}))["tasks"]
    _ok(harness.call(agent, "task.claim", {"task_id": build["id"]}))
    stored = _ok(
        harness.call(
            agent,
            "artifact.put",
            {
                "task_id": build["id"],
                "name": "bundle.txt",
                "artifact_type": "build",
                "content": "the bundle",
            },
        )
    )
    artifact_id = stored["artifact"]["artifact_id"]
    _ok(
        harness.call(
            agent, "task.complete", {"task_id": build["id"], "output_artifact_id": artifact_id}
        )
    )

    (ship,) = _ok(harness.call(agent, "task.poll", {}))["tasks"]
    assert ship["input_data"] == {"bundle": artifact_id, "note": f"from {build['id']}"}
    got = _ok(
        harness.call(
            agent,
            "artifact.get",
            {"artifact_id": ship["input_data"]["bundle"], "include_content": True},
        )
    )["artifact"]
    assert got["content"] == "the bundle"
    assert got["workflow_id"] == workflow_id
    status = _ok(harness.call(boss, "workflow.status", {"workflow_id": workflow_id}))["workflow"]
    assert status["execution"]["outputs"]["build"]["artifact"] == artifact_id
