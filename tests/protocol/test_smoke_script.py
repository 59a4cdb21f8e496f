"""The pipeline's post-deploy smoke test (scripts/smoke.py), run against a real `cairn serve`
exactly as the pipeline runs it against staging: it passes on a working server and fails, with
a reason, on a token the server refuses. The passing run is a fresh interpreter, as in the
pipeline; the failing ones call the script's `main` in this process (the same code, with the
same arguments, short of the ~2 s of CPU a fresh interpreter spends importing the MCP SDK)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import ModuleType

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


def _smoke_module() -> ModuleType:
    """scripts/smoke.py, imported (it is a script, not a package module)."""
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        import smoke
    finally:
        sys.path.remove(str(SCRIPT.parent))
    return smoke


def _smoke_in_process(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """The script's exit status, stdout and stderr, run by its `main` with `args`."""
    capsys.readouterr()
    status: int = _smoke_module().main(list(args))
    printed = capsys.readouterr()
    return status, printed.out, printed.err


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


def test_the_smoke_test_fails_when_the_deployment_refuses_the_token(
    server: LocalServer, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = _smoke_in_process(
        capsys, "--url", server.url, "--token", "cairn_sk_" + "x" * 43
    )

    assert status == 1
    assert err.startswith("FAIL ")
    assert "smoke test passed" not in out


def test_the_smoke_test_fails_when_the_origin_answers_without_cloudfronts_header(
    server: LocalServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """A local server has no origin guard: a call straight to it succeeds, which behind
    CloudFront would mean the WAF can be walked around."""
    status, _, err = _smoke_in_process(
        capsys, "--url", server.url, "--token", server.dev_token, "--origin-url", server.url
    )

    assert status == 1
    assert "without CloudFront's origin header: the WAF can be bypassed" in err


def test_an_origin_that_refuses_the_direct_call_passes() -> None:
    import threading
    from http.server import BaseHTTPRequestHandler, HTTPServer

    import anyio

    origin_refused = _smoke_module().origin_refused

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
