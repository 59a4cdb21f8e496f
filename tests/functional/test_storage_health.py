"""A failure to persist is never silent: the write that hit it fails, it is logged as an error,
and the database's health shows it until a write succeeds again. Real SQLite failures: the
database is capped at its current size (`max_page_count`), so the next write finds it full."""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shared import runtime
from shared.app.groups import load_catalog, load_groups
from shared.auth.models import TokenRequest
from shared.auth.wiring import build_token_service
from shared.config.settings import Settings
from shared.protocol.gateway import GatewayConfig, McpGateway
from shared.storage.sqlite import Database
from shared.tools.invoker import InProcessInvoker
from tests.jsonrpc import tools_call


def _cap_at_current_size(db: Database) -> int:
    connection = db.connection()
    pages = int(connection.execute("PRAGMA page_count").fetchone()[0])
    connection.execute(f"PRAGMA max_page_count = {pages}")
    return pages


def test_a_full_database_fails_the_write_and_shows_in_health(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    db = Database(tmp_path / "cairn.db")
    db.connection().execute("CREATE TABLE t (v TEXT)")
    _cap_at_current_size(db)
    with (
        caplog.at_level(logging.ERROR, logger="cairn.storage"),
        pytest.raises(sqlite3.Error),
        db.write() as tx,
    ):
        tx.execute("INSERT INTO t VALUES (?)", ("x" * 100_000,))
    assert db.health.failing
    assert db.health.failures == 1
    assert "full" in (db.health.last_failure or "")
    assert any("failed" in r.getMessage() for r in caplog.records)
    assert (
        db.connection().execute("SELECT COUNT(*) FROM t").fetchone()[0] == 0
    )  # nothing half-written

    db.connection().execute("PRAGMA max_page_count = 1073741823")
    with db.write() as tx:
        tx.execute("INSERT INTO t VALUES (?)", ("y",))
    assert not db.health.failing
    assert db.health.failures == 1


def test_a_domain_error_inside_a_transaction_is_not_a_storage_failure(tmp_path: Path) -> None:
    db = Database(tmp_path / "cairn.db")
    db.connection().execute("CREATE TABLE t (k TEXT PRIMARY KEY)")
    with db.write() as tx:
        tx.execute("INSERT INTO t VALUES ('a')")
    with pytest.raises(sqlite3.IntegrityError), db.write() as tx:
        tx.execute("INSERT INTO t VALUES ('a')")
    with pytest.raises(KeyError), db.write():
        raise KeyError("a store's own refusal")
    assert not db.health.failing
    assert db.health.failures == 0


@pytest.fixture
def sqlite_gateway(tmp_path: Path) -> Iterator[tuple[McpGateway, str]]:
    settings = Settings(environment="test", storage="sqlite", data_dir=tmp_path, token_pepper="p")
    runtime.configure(settings)
    tokens = build_token_service(settings)
    secret = tokens.issue(TokenRequest(team="alpha", name="t", scopes=("admin",))).secret
    gateway = McpGateway(load_catalog(), InProcessInvoker(load_groups()), tokens, GatewayConfig())
    yield gateway, secret
    runtime.configure(Settings())


def test_a_tool_call_whose_write_cannot_persist_is_not_acknowledged(
    sqlite_gateway: tuple[McpGateway, str],
) -> None:
    gateway, secret = sqlite_gateway

    def put(title: str, filler: int = 0) -> dict[str, Any]:
        arguments = {"title": title, "document_md": DOC + "x" * filler}
        body = tools_call("store_handoff", arguments)
        reply = gateway.handle_post(
            json.dumps(body).encode(),
            {
                "content-type": "application/json",
                "accept": "application/json",
                "authorization": f"Bearer {secret}",
            },
            "http://testserver",
        )
        assert reply.status < 500 or reply.body is not None
        assert reply.body is not None
        return reply.body

    assert "result" in put("first")
    # Same thread, same connection: the gateway's next write finds the database full.
    db = runtime.database()
    _cap_at_current_size(db)
    failed = put("second", filler=150_000)
    assert "error" in failed or failed["result"].get("isError")
    assert db.health.failing
    db.connection().execute("PRAGMA max_page_count = 1073741823")
    assert "result" in put("third")
    assert not db.health.failing


DOC = (
    "## Start & intent\nx\n## Journey\nx\n## Current state\nx\n## What’s left\nx\n"
    "## Open questions\nx\n"
)
