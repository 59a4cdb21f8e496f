"""A git token never reaches a log line (DEBUG included, dulwich's and urllib3's too), an error
or sync_status: against a local HTTP server that refuses it, and one that fails."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.functional.sync.conftest import Connectors

TOKEN = "ghp_s3cr3tT0kenValue1234567890"


class _Refusing(BaseHTTPRequestHandler):
    seen_authorization: list[str] = []

    def do_GET(self) -> None:
        self.seen_authorization.append(self.headers.get("Authorization", ""))
        status = 500 if "broken" in self.path else 401
        self.send_response(status)
        if status == 401:
            self.send_header("WWW-Authenticate", 'Basic realm="git"')
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        return None


@pytest.fixture
def refusing_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Refusing)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("repo", ["acme/handbook.git", "broken/handbook.git"])
def test_the_token_never_reaches_logs_errors_or_status(
    connectors: Connectors,
    refusing_server: str,
    repo: str,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HANDBOOK_TOKEN", TOKEN)
    for name in ("", "dulwich", "urllib3", "cairn"):
        caplog.set_level(logging.DEBUG, logger=name or None)
    connectors.sync.connector_add(
        "local",
        name="docs",
        kind="git",
        config={"url": f"{refusing_server}/{repo}", "token_env": "HANDBOOK_TOKEN"},
    )

    answer = connectors.run("docs")
    status = connectors.status("docs")
    listed = [r.public() for r in connectors.sync.connector_list("local")]

    (result,) = answer["connectors"]
    assert not result["success"]
    assert result["message"].startswith("connector 'docs' (git): cannot read the branches of")
    assert _Refusing.seen_authorization  # the token was offered (as basic auth)
    everything = caplog.text + repr(answer) + repr(status) + repr(listed)
    assert caplog.records  # DEBUG logging did capture something
    assert TOKEN not in everything
    assert "HANDBOOK_TOKEN" in repr(listed)  # the variable's name is kept, never its value


def test_an_unset_token_variable_is_named(connectors: Connectors) -> None:
    connectors.sync.connector_add(
        "local",
        name="docs",
        kind="git",
        config={"url": "https://git.example.com/r.git", "token_env": "NOT_SET_ANYWHERE_29"},
    )
    (result,) = connectors.run("docs")["connectors"]
    assert result["message"] == (
        "connector 'docs' (git): the environment variable NOT_SET_ANYWHERE_29 is not set"
    )
