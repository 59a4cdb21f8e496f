"""One door for every route: each route of the local server's app (MCP, metadata, health, the
console, the capture routes, the admin API) is public by declaration or guarded, and the guards
answer as the gateway does for the tool a route stands for."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from shared import runtime
from shared.auth.models import TokenRequest
from shared.config import names
from shared.config.settings import Settings
from shared.local.layout import ADMIN_HEADER
from shared.local.runtime import LocalRuntime
from shared.protocol.doors import AdminKey, Door, Public, ToolDoor, walk

# Public by declaration: nothing of a team's data behind them.
PUBLIC_PATHS = {
    "/mcp",
    "/mcp/{toolset}",
    "/mcp/jsonrpc",  # seed 004's path for /mcp (its 405 answers are public)
    "/.well-known/oauth-protected-resource",
    "/.well-known/oauth-protected-resource/mcp",
    "/.well-known/oauth-protected-resource/mcp/{toolset}",
    "/healthz",
}
BASE = "http://127.0.0.1:8765"


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalRuntime]:
    started = LocalRuntime(tmp_path_factory.mktemp("doors") / "data")
    started.start()
    yield started
    started.stop()
    runtime.configure(Settings())


@pytest.fixture(scope="module")
def client(local: LocalRuntime) -> Iterator[TestClient]:
    assert local.app is not None
    with TestClient(local.app, base_url=BASE) as test_client:
        yield test_client


def _fallback_doors(local: LocalRuntime) -> dict[tuple[str, str], Door | None]:
    assert local.app is not None
    return {(methods, path): door for methods, path, door in walk(local.app.fallback.routes)}


def test_every_route_of_the_local_app_declares_its_door(local: LocalRuntime) -> None:
    assert local.app is not None
    doors = _fallback_doors(local)

    assert doors, "the FastAPI app has routes"
    assert [route for route, door in doors.items() if door is None] == []
    for methods, path, kind in local.app.hot_routes():
        assert kind in {"public", "gateway"}, (methods, path)
        assert path in PUBLIC_PATHS
    # Whatever is public serves no team data: only reads, on known paths or static files.
    for (methods, path), door in doors.items():
        if isinstance(door, Public):
            assert path in PUBLIC_PATHS, path
            assert "POST" not in methods, path


def test_the_routes_that_write_team_data_are_guarded_as_the_tool_they_stand_for(
    local: LocalRuntime,
) -> None:
    doors = _fallback_doors(local)
    kinds = {path: door.kind for (_, path), door in doors.items() if door is not None}

    assert isinstance(doors[("POST", "/ingest/events")], ToolDoor)
    ingest = doors[("POST", "/ingest/events")]
    assert isinstance(ingest, ToolDoor)
    assert ingest.tool == "ingest_events"
    assert kinds["/hooks/github/{team}"] == "signed"
    assert all(kinds[path] == "gateway" for path in kinds if path.startswith("/console"))
    admin = [door for (_, path), door in doors.items() if path.startswith("/_local")]
    assert admin
    assert all(isinstance(door, AdminKey) for door in admin)


def test_no_tool_route_or_admin_route_answers_without_its_credential(
    local: LocalRuntime, client: TestClient
) -> None:
    for (methods, path), door in _fallback_doors(local).items():
        method = sorted(methods.split(","))[0]
        url = path.replace("{team}", "local").replace("{name}", "agent")
        url = url.replace("{token_id}", "tok_0").replace("{toolset}", "all")
        if isinstance(door, ToolDoor):
            assert client.request(method, url, json={}).status_code == 401, (method, path)
        elif isinstance(door, AdminKey):
            answer = client.request(method, url, json={}, headers={ADMIN_HEADER: "wrong"})
            assert answer.status_code == 401, (method, path)


def test_an_agent_context_token_is_refused_ingest_over_http_as_over_mcp(
    local: LocalRuntime, client: TestClient
) -> None:
    secret, _ = local.issue(
        TokenRequest(team=names.LOCAL_TEAM, name="agent", scopes=("admin",), context="agent")
    )
    headers = {"Authorization": f"Bearer {secret}"}
    event = {
        "id": "e1",
        "source": "shell",
        "timestamp": 1_700_000_000_000,
        "command": "ls",
        "exit_code": 0,
    }

    over_http = client.post("/ingest/events", json={"events": [event]}, headers=headers)
    over_mcp = client.post(
        "/mcp/all",
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "ingest_events", "arguments": {"events": [event]}},
        },
        headers={**headers, "Accept": "application/json"},
    )

    assert over_mcp.json()["error"]["code"] == -32002
    assert over_http.status_code == 403
    assert "agent" in over_http.json()["error"]


def test_a_token_whose_allow_list_lacks_ingest_is_refused_and_one_that_has_it_is_served(
    local: LocalRuntime, client: TestClient
) -> None:
    narrow, _ = local.issue(
        TokenRequest(
            team=names.LOCAL_TEAM, name="narrow", scopes=("ingest",), allowed_tools=("recall",)
        )
    )
    allowed, _ = local.issue(
        TokenRequest(
            team=names.LOCAL_TEAM,
            name="hook",
            scopes=("ingest",),
            allowed_tools=("ingest_events",),
        )
    )
    event = {
        "id": "e2",
        "source": "shell",
        "timestamp": 1_700_000_000_000,
        "command": "ls",
        "exit_code": 0,
    }
    body = {"events": [event]}

    refused = client.post(
        "/ingest/events", json=body, headers={"Authorization": f"Bearer {narrow}"}
    )
    served = client.post(
        "/ingest/events", json=body, headers={"Authorization": f"Bearer {allowed}"}
    )

    assert refused.status_code == 403
    assert served.status_code == 200, served.text


def test_a_rate_limited_token_gets_429_from_the_ingest_route(
    local: LocalRuntime, client: TestClient
) -> None:
    secret, _ = local.issue(
        TokenRequest(
            team=names.LOCAL_TEAM, name="slow", scopes=("ingest",), rate_limit_per_minute=1
        )
    )
    headers = {"Authorization": f"Bearer {secret}"}
    answers = [
        client.post("/ingest/events", json={"events": []}, headers=headers).status_code
        for _ in range(3)
    ]

    assert 429 in answers
