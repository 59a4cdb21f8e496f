"""The gateway's ASGI app: hot routes in plain ASGI, answering exactly as the FastAPI routes do;
FastAPI built only when a console or other route first needs it (in-process, no socket)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fastapi import Depends, FastAPI
from fastapi.responses import PlainTextResponse
from fastapi.testclient import TestClient

from shared.app.gateway import create_app
from shared.protocol.doors import Public
from tests.functional.conftest import Harness

ROOT = Path(__file__).resolve().parents[2]
JSON = {"content-type": "application/json", "accept": "application/json"}


def _requests(secret: str) -> list[tuple[str, str, dict[str, str], bytes | None]]:
    def rpc(method: str, **params: Any) -> bytes:
        return json.dumps({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}).encode()

    auth = {**JSON, "authorization": f"Bearer {secret}"}
    return [
        ("POST", "/mcp", auth, rpc("ping")),
        ("POST", "/mcp", auth, rpc("tools/call", name="memory_put", arguments={"key": "k"})),
        ("POST", "/mcp", auth, rpc("tools/call", name="nope", arguments={})),
        ("POST", "/mcp", JSON, rpc("ping")),  # 401 with WWW-Authenticate
        ("POST", "/mcp", {**auth, "authorization": "Bearer cairn_sk_wrong"}, rpc("ping")),
        ("POST", "/mcp", auth, b'{"jsonrpc": "2.0", "id": 1, "method": '),  # -32700
        ("POST", "/mcp", {**auth, "content-type": "text/plain"}, rpc("ping")),  # 415
        ("POST", "/mcp", {**auth, "origin": "https://evil.example"}, rpc("ping")),  # 403
        ("POST", "/mcp", auth, json.dumps({"jsonrpc": "2.0", "method": "x"}).encode()),  # 202
        ("GET", "/mcp", {}, None),
        ("HEAD", "/mcp", {}, None),
        ("DELETE", "/mcp", {}, None),
        ("PUT", "/mcp", {}, None),
        ("GET", "/.well-known/oauth-protected-resource", {}, None),
        ("GET", "/.well-known/oauth-protected-resource/mcp", {"x-forwarded-proto": "https"}, None),
    ]


def _answer(client: TestClient, method: str, path: str, headers: dict[str, str], body: Any) -> Any:
    response = client.request(method, path, headers=headers, content=body)
    return response.status_code, response.headers.raw, response.content


def test_the_hot_routes_answer_byte_for_byte_as_the_fastapi_routes_do(harness: Harness) -> None:
    secret = harness.token()
    hot = create_app(harness.gateway)
    reference = create_app(harness.gateway).fallback  # the same routes, through FastAPI
    with TestClient(hot) as fast, TestClient(reference) as slow:
        for method, path, headers, body in _requests(secret):
            assert _answer(fast, method, path, headers, body) == _answer(
                slow, method, path, headers, body
            ), (method, path, body)
    # Every one of them was answered without building (or importing, below) FastAPI.
    assert not hot.fallback_built


def test_the_console_and_unknown_paths_reach_fastapi_built_at_first_use(harness: Harness) -> None:
    app = create_app(harness.gateway)
    client = TestClient(app)
    assert client.get("/.well-known/oauth-protected-resource").status_code == 200
    assert not app.fallback_built
    page = client.get("/console/login")
    assert page.status_code == 200
    assert "csrf" in page.text
    assert app.fallback_built
    missing = client.get("/nowhere")
    assert (missing.status_code, missing.json()) == (404, {"detail": "Not Found"})
    # An unusual method on /mcp gets FastAPI's 405, as before.
    options = client.options("/mcp")
    assert (options.status_code, options.headers["allow"]) == (405, "POST")


def test_routes_added_before_and_after_the_build_are_both_served(harness: Harness) -> None:
    app = create_app(harness.gateway)

    def route(path: str, text: str) -> Any:
        def install(api: FastAPI) -> None:
            api.add_api_route(
                path,
                lambda: PlainTextResponse(text),
                methods=["GET"],
                dependencies=[Depends(Public("a test page"))],
            )

        return install

    app.add_routes(route("/before", "added first"))
    client = TestClient(app)
    assert client.get("/before").text == "added first"
    app.add_routes(route("/after", "added once built"))
    assert client.get("/after").text == "added once built"


def test_a_route_without_a_declared_door_is_never_served(harness: Harness) -> None:
    # Given a route that declares no door (shared.protocol.doors)
    def undeclared(api: FastAPI) -> None:
        api.add_api_route("/forgot", lambda: PlainTextResponse("team data"), methods=["GET"])

    app = create_app(harness.gateway)
    app.add_routes(undeclared)

    # When the app is built, or the route added to a built app, then it refuses
    with pytest.raises(RuntimeError, match="/forgot"):
        app.fallback  # noqa: B018
    built = create_app(harness.gateway)
    assert built.fallback is not None
    with pytest.raises(RuntimeError, match="/forgot"):
        built.add_routes(undeclared)


def test_the_health_route_reports_the_callable_status(harness: Harness) -> None:
    state = {"failing": False}

    def health() -> tuple[int, dict[str, Any]]:
        return (503, {"status": "failing"}) if state["failing"] else (200, {"status": "ok"})

    app = create_app(harness.gateway, health=health)
    client = TestClient(app)
    assert (client.get("/healthz").status_code, client.get("/healthz").json()) == (
        200,
        {"status": "ok"},
    )
    state["failing"] = True
    answer = client.get("/healthz")
    assert (answer.status_code, answer.json()) == (503, {"status": "failing"})
    assert answer.headers["content-type"] == "application/json"
    assert not app.fallback_built
    # Without a health callable (the Lambda app) the path is FastAPI's 404.
    assert TestClient(create_app(harness.gateway)).get("/healthz").status_code == 404


@pytest.mark.parametrize("module", ["shared.protocol.app", "shared.app.gateway"])
def test_the_gateway_app_imports_no_fastapi(module: str) -> None:
    script = f"import {module}, sys; print('fastapi' in sys.modules, 'starlette' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "False"]
