"""The pipeline's post-deploy smoke test (scripts/smoke.py), run against a real `cairn serve`
exactly as the pipeline runs it against staging: it passes on a working server and fails, with
a reason, on a token the server refuses."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.protocol.conftest import LocalServer

pytestmark = pytest.mark.protocol

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "smoke.py"


def _smoke(url: str, token: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--url", url, "--token", token],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_smoke_test_passes_against_a_working_server(server: LocalServer) -> None:
    result = _smoke(server.url, server.dev_token)

    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[-1] == "smoke test passed"
    steps = [line.split(" (")[0] for line in lines[:-1]]
    assert steps == [
        "ok  initialize",
        "ok  ping",
        "ok  tools/list",
        "ok  memory_put + memory_get",
        "ok  handoff store, list, claim, second claim refused",
    ]


def test_the_smoke_test_fails_when_the_deployment_refuses_the_token(server: LocalServer) -> None:
    result = _smoke(server.url, "cairn_sk_" + "x" * 43)

    assert result.returncode == 1
    assert result.stderr.startswith("FAIL ")
    assert "smoke test passed" not in result.stdout


def test_the_smoke_test_fails_when_the_origin_answers_without_cloudfronts_header(
    server: LocalServer,
) -> None:
    """A local server has no origin guard: a call straight to it succeeds, which behind
    CloudFront would mean the WAF can be walked around."""
    result = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--url",
            server.url,
            "--token",
            server.dev_token,
            "--origin-url",
            server.url,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert result.returncode == 1
    assert "without CloudFront's origin header: the WAF can be bypassed" in result.stderr


def test_an_origin_that_refuses_the_direct_call_passes() -> None:
    import threading
    from http.server import BaseHTTPRequestHandler, HTTPServer

    import anyio

    sys.path.insert(0, str(SCRIPT.parent))
    try:
        from smoke import origin_refused
    finally:
        sys.path.remove(str(SCRIPT.parent))

    class Refusing(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # the gateway's OriginGuard answer
            self.send_response(403)
            self.end_headers()

        def log_message(self, *_: object) -> None:
            pass

    origin = HTTPServer(("127.0.0.1", 0), Refusing)
    serving = threading.Thread(target=origin.serve_forever, daemon=True)
    serving.start()
    try:
        line = anyio.run(origin_refused, f"http://127.0.0.1:{origin.server_port}/v1", "cairn_sk_x")
    finally:
        origin.shutdown()
    assert line.startswith("ok   origin refuses a call without CloudFront's header")
    assert "/v1/mcp: 403" in line
