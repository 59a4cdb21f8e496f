"""A stop is bounded: SIGTERM while minutes of enrichment (and detection) are queued ends the
server within 10 s, the backlog abandoned with a line saying so, and no storm of errors from
workers writing to a closed database (a stop used to take 63 s, then log 605 of them)."""

from __future__ import annotations

import re
import signal
import time
from pathlib import Path

import pytest

from tests.protocol.conftest import DEV_TOKEN, posted_call, start_server

ERROR_LINE = re.compile(r"\b(ERROR|CRITICAL)\b|^Traceback|closed database")


@pytest.mark.bench  # 15-40 s; `make test` checks the same stop at the end of the short soak
@pytest.mark.protocol
def test_a_sigterm_during_an_enrichment_backlog_stops_within_10_s_without_an_error_storm(
    tmp_path: Path,
) -> None:
    # Given a server with about 25 s of enrichment queued (4 × 500 events) and memories
    # waiting for duplicate detection
    server = start_server(tmp_path / "data")
    try:
        now_ms = int(time.time() * 1000)
        for batch in range(4):
            events = [
                {
                    "id": f"b{batch}-{k}",
                    "source": "shell",
                    "timestamp": now_ms - 500 * batch - k,
                    "command": f"make target{batch} step{k}",
                    "exit_code": 0,
                    "cwd": f"/src/app{batch % 3}",
                }
                for k in range(500)
            ]
            answer = posted_call(server.url, DEV_TOKEN, "ingest_events", {"events": events})
            assert answer["structuredContent"]["accepted"] == 500
            posted_call(
                server.url, DEV_TOKEN, "remember", {"title": f"fact {batch}", "body": "Tuesdays."}
            )

        # When it is told to stop
        began = time.monotonic()
        server.process.send_signal(signal.SIGTERM)
        server.process.wait(timeout=30)
        took = time.monotonic() - began
    finally:
        if server.process.poll() is None:
            server.process.kill()
            server.process.wait()
    output = server.log.read_text() if server.log else ""

    # Then it ended within 10 s, normally, having said what it left, without an error storm
    assert took <= 10, f"{took:.1f} s:\n{output[-3000:]}"
    assert server.process.returncode == 0, output[-3000:]
    assert "left unenriched" in output  # the backlog was really there when it stopped
    errors = [line for line in output.splitlines() if ERROR_LINE.search(line)]
    assert len(errors) <= 2, errors[:10]
    assert "cairn stopped; state saved." in output
