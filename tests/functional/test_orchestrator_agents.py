"""Seed 000's agent tools through the gateway on moto: registration mints a bound token."""

from __future__ import annotations

import threading
from typing import Any

import boto3
import pytest

from shared.app.groups import load_groups
from shared.app.reactions import build_orchestrator
from shared.auth.principal import Principal
from shared.auth.wiring import build_token_service
from shared.config import names
from shared.config.settings import Settings
from shared.orchestrator.agents.adapters import DynamoAgentStore
from shared.orchestrator.agents.models import DEFAULT_AGENT_SCOPES, AgentRecord, RegisterAgentInput
from shared.orchestrator.agents.service import AgentService
from shared.protocol.gateway import GatewayConfig, McpGateway
from shared.tools.catalog import ToolCatalog
from shared.tools.errors import Conflict
from shared.tools.invoker import InProcessInvoker
from tests.functional.conftest import Harness
from tests.jsonrpc import tools_call


@pytest.fixture
def harness(aws: Settings) -> Harness:
    """The gateway with every group."""
    groups = load_groups()
    catalog = ToolCatalog(spec for group in groups.values() for spec in group.tools.values())
    invoker = InProcessInvoker(groups, threading.RLock())
    tokens = build_token_service(aws)
    return Harness(
        McpGateway(catalog, invoker, tokens, GatewayConfig(allow_localhost_origins=True)), tokens
    )


def _register(harness: Harness, token: str, name: str = "builder", **extra: Any) -> dict[str, Any]:
    result = harness.call(token, "agent.register", {"name": name, "agent_type": "codex", **extra})
    assert result["isError"] is False, result
    structured: dict[str, Any] = result["structuredContent"]
    return structured


def _rpc_error(harness: Harness, token: str, tool: str, arguments: dict[str, Any]) -> Any:
    reply = harness.post(
        tools_call(tool, arguments),
        token,
    )
    assert reply.body is not None
    return reply.status, reply.body.get("error")


def _items(settings: Settings) -> list[dict[str, Any]]:
    table = boto3.resource("dynamodb").Table(settings.table(names.TABLE_COORDINATION))
    return table.scan()["Items"]


def test_register_returns_a_token_bound_to_the_new_agent(harness: Harness) -> None:
    registrar = harness.token(scopes=("agent.register",))

    agent = _register(harness, registrar, capabilities=["python", "python", "sql"])
    beat = harness.call(agent["token"], "agent.heartbeat", {"agent_id": agent["agent_id"]})

    assert set(agent) == {"agent_id", "name", "token", "scopes", "capabilities"}
    assert agent["agent_id"].startswith("agt_")
    assert len(agent["agent_id"]) == len("agt_") + 24
    assert agent["name"] == "builder"
    assert agent["token"].startswith("cairn_sk_")
    assert agent["scopes"] == list(DEFAULT_AGENT_SCOPES)
    assert agent["capabilities"] == ["python", "sql"]
    assert beat["isError"] is False
    assert beat["structuredContent"] == {"success": True}
    record = harness.tokens.find(agent["token"])
    assert record is not None
    assert record.agent_id == agent["agent_id"]
    assert record.team == "alpha"
    assert record.name == "agent:builder"


def test_register_needs_the_agent_register_scope(harness: Harness) -> None:
    agent_token = harness.token(scopes=tuple(DEFAULT_AGENT_SCOPES))

    status, error = _rpc_error(
        harness, agent_token, "agent.register", {"name": "x", "agent_type": "codex"}
    )

    assert status == 403
    assert error == {"code": -32002, "message": "Token missing required scope: agent.register"}


@pytest.mark.parametrize(
    "scopes", [["admin"], ["agent.register"], ["task.read", "workflow.manage"]]
)
def test_register_refuses_scopes_beyond_the_agent_set(
    harness: Harness, aws: Settings, scopes: list[str]
) -> None:
    registrar = harness.token(scopes=("agent.register",))

    result = harness.call(
        registrar, "agent.register", {"name": "greedy", "agent_type": "codex", "scopes": scopes}
    )

    assert result["isError"] is True
    error: dict[str, Any] = result["error"]
    assert error["field"] == "scopes"
    assert scopes[-1] in error["message"]
    assert _items(aws) == []
    assert [r.name for r in harness.tokens.list_team("alpha")] == ["t"]  # no agent token minted


def test_requested_scopes_narrow_the_agent_token(harness: Harness) -> None:
    registrar = harness.token(scopes=("agent.register",))

    agent = _register(harness, registrar, scopes=["agent.self", "memory.read"])
    status, error = _rpc_error(harness, agent["token"], "agent.list", {})

    assert agent["scopes"] == ["agent.self", "memory.read"]
    assert (status, error["code"]) == (403, -32002)


def test_a_taken_name_is_a_409_naming_the_agent_that_holds_it(harness: Harness) -> None:
    registrar = harness.token(scopes=("agent.register",))
    first = _register(harness, registrar)

    result = harness.call(registrar, "agent.register", {"name": "builder", "agent_type": "x"})

    assert result["isError"] is True
    error: dict[str, Any] = result["error"]
    assert error["code"] == "conflict"
    assert error["status"] == 409
    assert error["field"] == "name"
    assert error["holder"] == {"agent_id": first["agent_id"]}
    assert first["agent_id"] in error["message"]


def test_overwrite_replaces_the_agent_and_revokes_its_old_token(harness: Harness) -> None:
    registrar = harness.token(scopes=("agent.register",))
    admin = harness.token()
    old = _register(harness, registrar, capabilities=["python"])

    new = _register(harness, registrar, capabilities=["rust"], overwrite=True)

    assert new["agent_id"] != old["agent_id"]
    status, error = _rpc_error(harness, old["token"], "agent.heartbeat", {"agent_id": "x"})
    assert (status, error["code"]) == (401, -32001)
    beat = harness.call(new["token"], "agent.heartbeat", {"agent_id": new["agent_id"]})
    assert beat["isError"] is False
    listed = harness.call(admin, "agent.list", {})["agents"]
    assert [(a["agent_id"], a["capabilities"]) for a in listed] == [(new["agent_id"], ["rust"])]
    service = build_orchestrator().agents
    assert service.active_agent("alpha", old["agent_id"]) is None
    replacement = service.active_agent("alpha", new["agent_id"])
    assert replacement is not None
    assert replacement.capabilities == frozenset({"rust"})


def test_an_agent_may_heartbeat_and_update_only_itself(harness: Harness) -> None:
    registrar = harness.token(scopes=("agent.register",))
    mine = _register(harness, registrar, name="mine")
    other = _register(harness, registrar, name="other")

    cases: list[tuple[str, dict[str, Any]]] = [
        ("agent.heartbeat", {}),
        ("agent.capabilities", {"capabilities": []}),
        ("agent.deregister", {}),
    ]
    for tool, extra in cases:
        result = harness.call(mine["token"], tool, {"agent_id": other["agent_id"], **extra})

        assert result["isError"] is True, (tool, result)
        assert result["error"]["field"] == "agent_id"
        assert mine["agent_id"] in result["error"]["message"]
    # A token bound to no agent (without admin) acts on none.
    unbound = harness.token(scopes=("agent.self",))
    result = harness.call(unbound, "agent.heartbeat", {"agent_id": other["agent_id"]})
    assert result["error"]["field"] == "agent_id"
    assert harness.call(other["token"], "agent.list", {})["agents"][0]["status"] == "active"


def test_heartbeat_and_capabilities_show_in_the_list_without_tokens(harness: Harness) -> None:
    registrar = harness.token(scopes=("agent.register",))
    agent = _register(
        harness,
        registrar,
        capabilities=["python"],
        metadata={"host": "ci-7", "ratio": 0.5},
        max_concurrent_tasks=3,
        default_model="claude-sonnet",
        model_provider="anthropic",
    )

    harness.call(
        agent["token"], "agent.heartbeat", {"agent_id": agent["agent_id"], "status": "busy"}
    )
    harness.call(
        agent["token"],
        "agent.capabilities",
        {"agent_id": agent["agent_id"], "capabilities": ["sql", "docs"]},
    )
    listed = harness.call(agent["token"], "agent.list", {})

    assert listed["isError"] is False
    [shown] = listed["agents"]
    assert shown["agent_id"] == agent["agent_id"]
    assert shown["name"] == "builder"
    assert shown["agent_type"] == "codex"
    assert shown["capabilities"] == ["sql", "docs"]
    assert shown["status"] == "busy"
    assert shown["last_heartbeat"] is not None
    assert shown["max_concurrent_tasks"] == 3
    assert shown["default_model"] == "claude-sonnet"
    assert shown["model_provider"] == "anthropic"
    assert shown["metadata"] == {"host": "ci-7", "ratio": 0.5}
    assert shown["created_by"].startswith("token:tok_")
    assert "token" not in str(listed["structuredContent"]).replace("token:tok_", "")
    assert agent["token"] not in str(listed)
    active = build_orchestrator().agents.active_agent("alpha", agent["agent_id"])
    assert active is not None
    assert active.capabilities == {"sql", "docs"}


def test_deregister_revokes_the_token_frees_the_name_and_leaves_the_list(
    harness: Harness,
) -> None:
    registrar = harness.token(scopes=("agent.register",))
    admin = harness.token()
    gone = _register(harness, registrar, name="gone")
    stays = _register(harness, registrar, name="stays")

    result = harness.call(gone["token"], "agent.deregister", {"agent_id": gone["agent_id"]})

    assert result["structuredContent"] == {"success": True}
    status, error = _rpc_error(harness, gone["token"], "agent.list", {})
    assert (status, error["code"]) == (401, -32001)
    listed = harness.call(admin, "agent.list", {})["agents"]
    assert [a["agent_id"] for a in listed] == [stays["agent_id"]]
    assert build_orchestrator().agents.active_agent("alpha", gone["agent_id"]) is None
    # Idempotent for an admin; a heartbeat on the retired agent is a 404.
    again = harness.call(admin, "agent.deregister", {"agent_id": gone["agent_id"]})
    assert again["isError"] is False
    beat = harness.call(admin, "agent.heartbeat", {"agent_id": gone["agent_id"]})
    assert beat["error"]["status"] == 404
    # The name is free again, without overwrite.
    assert _register(harness, registrar, name="gone")["agent_id"] != gone["agent_id"]


def test_another_team_cannot_reach_an_agent_even_with_admin(harness: Harness) -> None:
    agent = _register(harness, harness.token(team="alpha", scopes=("agent.register",)))
    intruder = harness.token(team="beta")

    for tool, extra in (
        ("agent.heartbeat", {}),
        ("agent.capabilities", {"capabilities": ["x"]}),
        ("agent.deregister", {}),
    ):
        result = harness.call(intruder, tool, {"agent_id": agent["agent_id"], **extra})
        assert result["isError"] is True, tool
        assert result["error"]["code"] == "not_found"
        assert result["error"]["status"] == 404
    assert harness.call(intruder, "agent.list", {})["agents"] == []
    assert build_orchestrator().agents.active_agent("beta", agent["agent_id"]) is None
    beat = harness.call(agent["token"], "agent.heartbeat", {"agent_id": agent["agent_id"]})
    assert beat["isError"] is False
    # The same name is free in another team.
    _register(harness, harness.token(team="beta", scopes=("agent.register",)))


def test_an_unknown_agent_is_a_404(harness: Harness) -> None:
    admin = harness.token()

    result = harness.call(admin, "agent.heartbeat", {"agent_id": "agt_nope"})

    assert result["error"] == {
        "code": "not_found",
        "message": "`agent_id`: no active agent with id 'agt_nope' in your team; use an id "
        "from agent.list, or agent.register a new agent",
        "field": "agent_id",
        "status": 404,
    }


def test_heartbeat_may_not_claim_the_deregistered_status(harness: Harness) -> None:
    agent = _register(harness, harness.token(scopes=("agent.register",)))

    result = harness.call(
        agent["token"],
        "agent.heartbeat",
        {"agent_id": agent["agent_id"], "status": "deregistered"},
    )

    assert result["isError"] is True
    assert result["error"]["field"] == "status"


def test_the_name_alias_is_one_item_per_live_name(harness: Harness, aws: Settings) -> None:
    registrar = harness.token(scopes=("agent.register",))
    agent = _register(harness, registrar)

    items = {item["sk"]: item for item in _items(aws)}

    assert items["AGENT_NAME#builder"]["agent_id"] == agent["agent_id"]
    stored = items[f"AGENT#{agent['agent_id']}"]
    assert stored["pk"] == "TEAM#alpha"
    assert agent["token"] not in str(stored)
    assert stored["token_id"].startswith("tok_")


class _StaleNameReads(DynamoAgentStore):
    """A store whose name lookup always misses, as if a racing registration had not landed yet."""

    def get_by_name(self, team: str, name: str) -> AgentRecord | None:
        return None


def test_a_registration_that_loses_the_name_race_is_a_409_and_its_token_is_revoked(
    aws: Settings,
) -> None:
    tokens = build_token_service(aws)
    table = boto3.resource("dynamodb").Table(aws.table(names.TABLE_COORDINATION))
    service = AgentService(_StaleNameReads(table), tokens)
    registrar = Principal(
        team="alpha", token_id="tok_reg", token_name="reg", scopes=frozenset({"agent.register"})
    )
    winner = service.register(registrar, RegisterAgentInput(name="builder", agent_type="codex"))

    with pytest.raises(Conflict) as lost:
        service.register(registrar, RegisterAgentInput(name="builder", agent_type="codex"))

    assert lost.value.holder == {"agent_id": winner.agent_id}
    agent_tokens = [r for r in tokens.list_team("alpha") if r.name == "agent:builder"]
    assert len(agent_tokens) == 2
    assert [r.agent_id for r in agent_tokens if tokens.is_active(r)] == [winner.agent_id]
    assert [item["sk"].split("#")[0] for item in _items(aws)].count("AGENT") == 1


def test_names_resolve_agents_and_tokens_of_the_team_for_any_reader(harness: Harness) -> None:
    registrar = harness.token(scopes=("agent.register",))
    builder = _register(harness, registrar, name="builder")
    retired = _register(harness, registrar, name="retired")
    harness.call(retired["token"], "agent.deregister", {"agent_id": retired["agent_id"]})
    ci_bot = harness.token(scopes=("memory",), name="ci-bot")
    ci_bot_id = harness.tokens.authenticate(ci_bot)[0].token_id
    reader = harness.token(scopes=("memory.read",))
    asked = [
        builder["agent_id"],
        retired["agent_id"],
        f"token:{ci_bot_id}",
        "agent-7",  # an agent id bound to a token, never registered: it is its own name
        "token:tok_unknown",
    ]

    result = harness.call(reader, "agent.names", {"ids": asked})

    assert result["isError"] is False, result
    assert result["structuredContent"]["names"] == {
        builder["agent_id"]: "builder",
        retired["agent_id"]: "retired",  # its work outlives it
        f"token:{ci_bot_id}": "ci-bot",
    }
    # Another team learns nothing, and a token that reads nothing with actors in it may not ask.
    beta = harness.call(harness.token(team="beta"), "agent.names", {"ids": asked})
    assert beta["structuredContent"]["names"] == {}
    status, error = _rpc_error(
        harness, harness.token(scopes=("search",)), "agent.names", {"ids": asked}
    )
    assert error["code"] == -32002, (status, error)
