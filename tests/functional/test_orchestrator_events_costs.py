"""Seed 000's event.* and cost.* on moto, through the gateway."""

from __future__ import annotations

import boto3

from shared.config import names
from shared.config.settings import Settings
from shared.orchestrator.costs.service import cost_of
from tests.functional.conftest import Harness, no_error


def test_published_events_are_polled_oldest_first_and_since_continues(harness: Harness) -> None:
    token = harness.token(team="alpha", agent_id="a1")
    ids = [
        no_error(
            harness.call(token, "event.publish", {"event_type": "build.done", "payload": {"n": n}})
        )["event_id"]
        for n in range(5)
    ]

    first = no_error(harness.call(token, "event.poll", {"limit": 3}))
    rest = no_error(harness.call(token, "event.poll", {"since": first["next_since"]}))

    assert all(i.startswith("evt-") for i in ids)
    assert [e["event_id"] for e in first["events"]] == ids[:3]
    assert [e["event_id"] for e in rest["events"]] == ids[3:]
    assert first["events"][0]["payload"] == {"n": 0}
    assert first["events"][0]["published_by"] == "a1"
    assert (
        no_error(harness.call(token, "event.poll", {"since": rest["next_since"]}))["events"] == []
    )


def test_poll_filters_by_type_and_another_team_sees_nothing(harness: Harness) -> None:
    alpha = harness.token(team="alpha")
    beta = harness.token(team="beta")
    harness.call(alpha, "event.publish", {"event_type": "a", "payload": {}})
    harness.call(alpha, "event.publish", {"event_type": "b", "payload": {"x": 1.5}})

    typed = no_error(harness.call(alpha, "event.poll", {"event_type": "b"}))["events"]

    assert [(e["event_type"], e["payload"]) for e in typed] == [("b", {"x": 1.5})]
    assert no_error(harness.call(beta, "event.poll", {}))["events"] == []


def test_an_oversized_payload_is_refused_naming_it(harness: Harness, aws: Settings) -> None:
    token = harness.token(team="alpha")

    result = harness.call(
        token, "event.publish", {"event_type": "big", "payload": {"blob": "x" * 70_000}}
    )

    assert result["isError"] is True
    assert result["error"]["field"] == "payload"
    table = boto3.resource("dynamodb").Table(aws.table(names.TABLE_COORDINATION))
    assert table.scan()["Items"] == []


def test_cost_is_the_estimate_or_tokens_times_prices() -> None:
    assert cost_of(1000, 500, 0.25, 3.0, 15.0) == 0.25
    assert cost_of(1_000_000, 200_000, None, 3.0, 15.0) == 6.0
    assert cost_of(10, 10, None, None, None) == 0.0


def test_costs_are_summarised_by_agent_model_and_workflow(harness: Harness) -> None:
    a1 = harness.token(team="alpha", agent_id="a1")
    a2 = harness.token(team="alpha", agent_id="a2")
    base = {"provider": "anthropic", "tokens_input": 1_000_000, "tokens_output": 0}
    no_error(
        harness.call(
            a1,
            "cost.report",
            {
                **base,
                "agent_id": "a1",
                "model": "opus",
                "input_price_per_mtok": 15.0,
                "workflow_id": "wf",
            },
        )
    )
    no_error(
        harness.call(
            a1,
            "cost.report",
            {**base, "agent_id": "a1", "model": "haiku", "estimated_cost_usd": 1.0},
        )
    )
    reported = no_error(
        harness.call(
            a2,
            "cost.report",
            {
                **base,
                "agent_id": "a2",
                "model": "opus",
                "estimated_cost_usd": 5.0,
                "workflow_id": "wf",
            },
        )
    )

    summary = no_error(harness.call(a1, "cost.summary", {"period": "7d", "group_by": "workflow"}))

    assert reported["cost_usd"] == 5.0
    assert summary["total_usd"] == 21.0
    assert [(g["key"], g["total_usd"]) for g in summary["by_agent"]] == [("a1", 16.0), ("a2", 5.0)]
    assert [(g["key"], g["total_usd"]) for g in summary["by_model"]] == [
        ("opus", 20.0),
        ("haiku", 1.0),
    ]
    assert [(g["key"], g["total_usd"]) for g in summary["groups"]] == [
        ("wf", 20.0),
        ("(none)", 1.0),
    ]


def test_an_agent_reports_only_its_own_cost(harness: Harness) -> None:
    a1 = harness.token(team="alpha", agent_id="a1", scopes=("cost.write",))

    result = harness.call(
        a1,
        "cost.report",
        {"agent_id": "a2", "model": "m", "provider": "p", "estimated_cost_usd": 9},
    )

    assert result["isError"] is True
    assert result["error"]["field"] == "agent_id"


def test_budget_reports_spend_per_scope_against_no_limit_by_default(harness: Harness) -> None:
    a1 = harness.token(team="alpha", agent_id="a1")
    no_error(
        harness.call(
            a1,
            "cost.report",
            {
                "agent_id": "a1",
                "model": "m",
                "provider": "p",
                "estimated_cost_usd": 2.5,
                "workflow_id": "wf",
            },
        )
    )

    budget = no_error(harness.call(a1, "cost.budget", {"agent_id": "a1", "workflow_id": "other"}))

    assert budget["global"] == {"spent_usd": 2.5, "limit_usd": None, "remaining_usd": None}
    assert budget["agent"]["spent_usd"] == 2.5
    assert budget["workflow"]["spent_usd"] == 0.0
    beta = harness.token(team="beta")
    assert no_error(harness.call(beta, "cost.summary", {}))["total_usd"] == 0.0


def test_a_configured_limit_gives_the_remaining_budget(aws: Settings) -> None:
    from shared.auth.principal import Principal
    from shared.orchestrator.costs.adapters.dynamodb import DynamoCostLedger
    from shared.orchestrator.costs.service import CostService

    table = boto3.resource("dynamodb").Table(aws.table(names.TABLE_COORDINATION))
    costs = CostService(DynamoCostLedger(table), budget_usd=10.0)
    agent = Principal(team="alpha", token_id="t", token_name="t", scopes=frozenset(), agent_id="a1")
    costs.report(agent, agent_id="a1", model="m", provider="p", estimated_cost_usd=4.0)

    overall, _, _ = costs.budget(agent, "30d", None, None)

    assert (overall.spent_usd, overall.limit_usd, overall.remaining_usd) == (4.0, 10.0, 6.0)
