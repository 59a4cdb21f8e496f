"""Authentication, scopes, allow-lists, team isolation, rate limits and agent identity."""

from __future__ import annotations

import json
import re
import secrets
import time
import uuid
from typing import Any

import httpx
import pytest

from shared.app.groups import tool_specs
from tests.protocol.conftest import LOOPBACK_TLS, LocalServer

pytestmark = pytest.mark.protocol

SECRET_LINE = re.compile(r"^cairn_sk_[A-Za-z0-9_-]{43}$")
RATE_LIMITED = re.compile(r"^Rate limit exceeded\. Try again in (\d+) seconds\.$")


def _post(
    server: LocalServer, message: dict[str, Any], authorization: str | None
) -> httpx.Response:
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if authorization is not None:
        headers["Authorization"] = authorization
    response = httpx.post(
        server.url, content=json.dumps(message), headers=headers, timeout=30, verify=LOOPBACK_TLS
    )
    assert response.status_code < 500, response.text
    return response


def _rpc(
    server: LocalServer, token: str, method: str, params: dict[str, Any] | None = None
) -> httpx.Response:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": method}
    if params is not None:
        message["params"] = params
    return _post(server, message, f"Bearer {token}")


def _call(server: LocalServer, token: str, name: str, arguments: dict[str, Any]) -> httpx.Response:
    return _rpc(server, token, "tools/call", {"name": name, "arguments": arguments})


def _result(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()["result"]
    return result


def _tool_names(server: LocalServer, token: str) -> set[str]:
    return {tool["name"] for tool in _result(_rpc(server, token, "tools/list"))["tools"]}


def _team(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _token_id(server: LocalServer, team: str, name: str) -> str:
    listed = server.cli("tokens", "list", "--team", team).stdout.splitlines()
    records = [json.loads(line) for line in listed if line.strip()]
    (record,) = [r for r in records if r["name"] == name]
    token_id: str = record["token_id"]
    return token_id


# -- Scopes and allow-lists ------------------------------------------------------------------


@pytest.fixture(scope="module")
def ingest_token(server: LocalServer) -> str:
    return server.create_token(_team("scope"), "ingest", "ingest-only")


@pytest.fixture(scope="module")
def search_token(server: LocalServer) -> str:
    return server.create_token(_team("scope"), "search", "search-only")


def test_every_tool_refuses_a_token_without_its_scope_with_32002_and_http_403(
    server: LocalServer, ingest_token: str, search_token: str
) -> None:
    catalog = tool_specs()
    listed = sorted(_tool_names(server, server.dev_token))
    assert listed
    wrong: dict[str, Any] = {}
    for name in listed:
        spec = catalog.get(name)
        assert spec is not None, f"{name} is listed but not in the catalog"
        # Each tool is called with a token that lacks every scope it accepts.
        token = search_token if "ingest" in spec.scopes else ingest_token
        if "search" in spec.scopes and "ingest" in spec.scopes:
            raise AssertionError(f"{name}: add a third scope-less token to this test")
        response = _call(server, token, name, {})
        error = response.json().get("error", {})
        message = error.get("message", "")
        required = message.removeprefix("Token missing required scope: ")
        if not (
            response.status_code == 403
            and error.get("code") == -32002
            and message.startswith("Token missing required scope: ")
            and required in spec.scopes
        ):
            wrong[name] = (response.status_code, error)
    assert wrong == {}


@pytest.fixture(scope="module")
def read_token(server: LocalServer) -> str:
    return server.create_token(_team("read"), "memory.read", "reader")


def test_tools_list_shows_a_read_token_the_read_tools_but_not_memory_put(
    server: LocalServer, read_token: str
) -> None:
    names = _tool_names(server, read_token)

    assert {"memory_get", "memory_search"} <= names
    assert "memory_put" not in names


def test_memory_put_refuses_a_read_token_naming_memory_write(
    server: LocalServer, read_token: str
) -> None:
    response = _call(server, read_token, "memory_put", {"key": "k", "content": "c"})

    assert response.status_code == 403
    assert response.json()["error"] == {
        "code": -32002,
        "message": "Token missing required scope: memory.write",
    }


@pytest.fixture(scope="module")
def allow_listed_token(server: LocalServer) -> str:
    return server.create_token(_team("allow"), "memory", "only-get", "--tools", "memory_get")


def test_tools_list_shows_only_the_tools_of_the_allow_list(
    server: LocalServer, allow_listed_token: str
) -> None:
    assert _tool_names(server, allow_listed_token) == {"memory_get"}


def test_a_tool_outside_the_allow_list_is_refused_with_32002_and_http_403(
    server: LocalServer, allow_listed_token: str
) -> None:
    # Seed 004: an allow-list (explicit or a context) refuses other tools as a missing scope.
    response = _call(server, allow_listed_token, "memory_search", {"query": "anything"})

    assert response.status_code == 403
    error = response.json()["error"]
    assert error["code"] == -32002
    assert error["message"] == "Token not allowed to call memory_search: not in its allow-list"


# -- Team isolation --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def two_teams(server: LocalServer) -> dict[str, Any]:
    team_a, team_b = _team("team-a"), _team("team-b")
    token_a = server.create_token(team_a, "memory", "a")
    token_b = server.create_token(team_b, "memory", "b")
    word = f"zebracorn{uuid.uuid4().hex[:6]}"
    stored = _result(
        _call(server, token_b, "memory_put", {"key": "launch-codes", "content": f"{word} 0000"})
    )
    assert stored["isError"] is False
    return {
        "a": token_a,
        "b": token_b,
        "memory": stored["structuredContent"]["memory"],
        "word": word,
    }


def test_a_team_cannot_read_another_teams_memory_by_key(
    server: LocalServer, two_teams: dict[str, Any]
) -> None:
    result = _result(_call(server, two_teams["a"], "memory_get", {"key": "launch-codes"}))

    assert result["structuredContent"] == {"memory": None}


def test_a_team_cannot_read_another_teams_memory_by_id(
    server: LocalServer, two_teams: dict[str, Any]
) -> None:
    memory_id = two_teams["memory"]["id"]

    result = _result(_call(server, two_teams["a"], "memory_get", {"id": memory_id}))

    assert result["structuredContent"] == {"memory": None}


def test_a_team_cannot_find_another_teams_memory_by_search(
    server: LocalServer, two_teams: dict[str, Any]
) -> None:
    result = _result(_call(server, two_teams["a"], "memory_search", {"query": two_teams["word"]}))

    assert result["structuredContent"] == {"results": []}


def test_the_owning_team_does_find_its_memory_by_search(
    server: LocalServer, two_teams: dict[str, Any]
) -> None:
    result = _result(_call(server, two_teams["b"], "memory_search", {"query": two_teams["word"]}))

    assert [hit["id"] for hit in result["structuredContent"]["results"]] == [
        two_teams["memory"]["id"]
    ]


# -- Authentication --------------------------------------------------------------------------


def _assert_unauthenticated(response: httpx.Response) -> None:
    assert response.status_code == 401
    assert response.json()["error"]["code"] == -32001


def test_a_revoked_token_is_refused_with_32001_and_http_401(server: LocalServer) -> None:
    team = _team("revoke")
    token = server.create_token(team, "memory", "to-revoke")
    assert _rpc(server, token, "ping").status_code == 200

    server.cli("tokens", "revoke", _token_id(server, team, "to-revoke"))

    _assert_unauthenticated(_rpc(server, token, "ping"))


def test_an_unknown_token_is_refused_with_32001_and_http_401(server: LocalServer) -> None:
    unknown = "cairn_sk_" + secrets.token_urlsafe(32)

    _assert_unauthenticated(_rpc(server, unknown, "ping"))


def test_a_request_without_authorization_is_refused_with_32001_and_http_401(
    server: LocalServer,
) -> None:
    _assert_unauthenticated(_post(server, {"jsonrpc": "2.0", "id": 1, "method": "ping"}, None))


def test_basic_authorization_is_refused_with_32001_and_http_401(server: LocalServer) -> None:
    message = {"jsonrpc": "2.0", "id": 1, "method": "ping"}

    _assert_unauthenticated(_post(server, message, "Basic dXNlcjpwYXNzd29yZA=="))


# -- Rate limit ------------------------------------------------------------------------------


def test_the_sixth_request_in_a_minute_of_a_five_per_minute_token_is_rate_limited(
    server: LocalServer,
) -> None:
    token = server.create_token(_team("rate"), "memory", "five", "--rate-limit", "5")
    if time.time() % 60 > 55:  # the limit counts per clock minute: start inside one window
        time.sleep(60 - time.time() % 60 + 0.2)

    statuses = [_rpc(server, token, "ping").status_code for _ in range(5)]
    sixth = _rpc(server, token, "ping")

    assert statuses == [200] * 5
    assert sixth.status_code == 429
    error = sixth.json()["error"]
    assert error["code"] == -32003
    match = RATE_LIMITED.fullmatch(error["message"])
    assert match, error["message"]
    seconds = int(match.group(1))
    assert 1 <= seconds <= 60
    assert sixth.headers["Retry-After"] == str(seconds)


# -- Agent identity --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def agent_token(server: LocalServer) -> str:
    return server.create_token(_team("agents"), "memory", "bound", "--agent", "agent-7")


def test_memory_written_with_an_agent_token_is_created_by_that_agent(
    server: LocalServer, agent_token: str
) -> None:
    key = f"agent-{uuid.uuid4().hex}"

    result = _result(_call(server, agent_token, "memory_put", {"key": key, "content": "mine"}))

    assert result["structuredContent"]["memory"]["created_by"] == "agent-7"


@pytest.mark.parametrize("field", ["agent_id", "created_by"])
def test_an_identity_argument_is_rejected_naming_it_and_nothing_is_written(
    server: LocalServer, agent_token: str, field: str
) -> None:
    key = f"spoof-{uuid.uuid4().hex}"
    arguments = {"key": key, "content": "spoofed", field: "agent-evil"}

    result = _result(_call(server, agent_token, "memory_put", arguments))

    assert result["isError"] is True
    assert field in " ".join(block["text"] for block in result["content"])
    stored = _result(_call(server, agent_token, "memory_get", {"key": key}))
    assert stored["structuredContent"] == {"memory": None}


# -- The CLI ---------------------------------------------------------------------------------


def test_tokens_create_prints_the_secret_alone_on_stdout(server: LocalServer) -> None:
    done = server.cli(
        "tokens", "create", "--team", _team("cli"), "--name", "printed", "--scopes", "memory"
    )

    lines = done.stdout.splitlines()
    assert len(lines) == 1
    assert SECRET_LINE.fullmatch(lines[0]), done.stdout
    assert lines[0] not in done.stderr
    assert "created token" in done.stderr
