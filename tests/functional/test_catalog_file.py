"""The generated tool catalog (what the gateway serves in Lambda, without importing any group)
against the catalog the groups' models make (what the local server serves)."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import mcp_types
import pytest

from shared.app.catalog import gateway_catalog, main
from shared.app.groups import load_catalog, load_groups
from shared.auth.wiring import build_token_service
from shared.config.settings import Settings
from shared.protocol import versions
from shared.protocol.gateway import McpGateway
from shared.tools.catalog import CATALOG_FILE_ENV, ToolCatalog, generated_catalog, render
from shared.tools.invoker import InProcessInvoker
from tests.functional.conftest import Harness


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("catalog") / "catalog.json"
    assert main([str(path)]) == 0
    return path


def _harness(catalog: ToolCatalog, settings: Settings) -> Harness:
    tokens = build_token_service(settings)
    invoker = InProcessInvoker(load_groups(), threading.RLock())
    return Harness(McpGateway(catalog, invoker, tokens), tokens)


def _list_all(harness: Harness, token: str) -> list[dict[str, Any]]:
    tools: list[dict[str, Any]] = []
    params: dict[str, Any] = {}
    while True:
        reply = harness.post(
            {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": params}, token
        )
        assert reply.status == 200, reply.body
        assert reply.body is not None
        tools += reply.body["result"]["tools"]
        cursor = reply.body["result"].get("nextCursor")
        if cursor is None:
            return tools
        params = {"cursor": cursor}


@pytest.mark.parametrize("scopes", [("admin",), ("memory.read",), ("search", "get")])
def test_tools_list_from_the_generated_catalog_is_the_one_the_models_make(
    aws: Settings, generated: Path, scopes: tuple[str, ...]
) -> None:
    live = _harness(load_catalog(), aws)
    from_file = _harness(generated_catalog(generated), aws)
    token = live.token(scopes=scopes)
    listed = _list_all(from_file, token)
    assert listed
    # Byte for byte, order included: a client cannot tell which one answered.
    assert json.dumps(listed) == json.dumps(_list_all(live, token))


def test_the_generated_catalog_routes_every_tool_as_the_models_do(generated: Path) -> None:
    live = load_catalog()
    assert [entry.to_json() for entry in generated_catalog(generated)] == live.to_json()
    assert generated.read_text() == render(live)
    assert len(live) > 80


def test_the_lambda_gateway_reads_the_generated_file_when_its_bundle_has_one(
    generated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    one_tool = tmp_path / "catalog.json"
    one_tool.write_text(json.dumps(json.loads(generated.read_text())[:1]))
    monkeypatch.setenv(CATALOG_FILE_ENV, str(one_tool))
    assert len(gateway_catalog()) == 1
    # No file (the repository, local mode): the live groups' catalog.
    monkeypatch.setenv(CATALOG_FILE_ENV, str(tmp_path / "absent.json"))
    assert len(gateway_catalog()) == len(load_catalog())


def test_bad_arguments_are_refused_by_the_group_naming_the_field(
    aws: Settings, generated: Path
) -> None:
    # The gateway no longer holds the models: the group function validates, with the same
    # error a gateway-side check gave.
    harness = _harness(generated_catalog(generated), aws)
    token = harness.token(scopes=("memory",))
    result = harness.call(token, "memory_put", {"key": "k"})
    assert result["isError"] is True
    structured = result["structuredContent"]
    assert isinstance(structured, dict)
    assert structured["error"]["code"] == "invalid_argument"
    assert structured["error"]["field"] == "content"


def test_the_meta_keys_are_the_ones_mcp_types_defines() -> None:
    assert versions.PROTOCOL_VERSION_META_KEY == mcp_types.PROTOCOL_VERSION_META_KEY
    assert versions.CLIENT_CAPABILITIES_META_KEY == mcp_types.CLIENT_CAPABILITIES_META_KEY
    assert versions.SERVER_INFO_META_KEY == mcp_types.SERVER_INFO_META_KEY
