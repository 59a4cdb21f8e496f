"""Search through a real server while memories are written and retracted: 8 readers and 2
writers retracting what they wrote, for a minute, give no -32603 (a row deleted between the
index finding it and reading it used to fail the whole search: 231 of 4,213 reads).
`make test` covers the same at the index (tests/unit/search/test_embedded_concurrent_deletes.py)
and through the server in the short soak (tests/e2e/test_bench_soak.py)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from shared.bench.wire import json_headers
from tests.jsonrpc import tools_call
from tests.protocol.conftest import start_server, stop_server

SECONDS = 60.0
QUERIES = ("release schedule", "who owns billing", "deploy window", "search index")


@pytest.mark.bench
@pytest.mark.protocol
def test_8_readers_and_2_retracting_writers_for_a_minute_give_no_internal_error(
    tmp_path: Path,
) -> None:
    server = start_server(tmp_path / "data")
    token = server.create_token("local", "admin", "race", "--rate-limit", "100000")
    outcomes: dict[str, int] = {"reads": 0, "writes": 0, "internal_errors": 0, "other": 0}
    examples: list[str] = []
    lock = threading.Lock()
    stop_at = time.monotonic() + SECONDS

    def tally(key: str, example: str = "") -> None:
        with lock:
            outcomes[key] += 1
            if example and len(examples) < 5:
                examples.append(example[:300])

    def call(http: httpx.Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any] | None:
        payload = http.post(server.url, json=tools_call(tool, arguments)).json()
        if "error" in payload:
            code = payload["error"].get("code")
            tally("internal_errors" if code == -32603 else "other", f"{tool}: {payload}")
            return None
        result: dict[str, Any] = payload["result"]
        if result.get("isError"):
            tally("other", f"{tool}: {result}")
            return None
        return result.get("structuredContent") or {}

    def reader(slot: int) -> None:
        with httpx.Client(headers=json_headers(token), timeout=60) as http:
            n = 0
            while time.monotonic() < stop_at:
                query = QUERIES[(slot + n) % len(QUERIES)]
                tool = ("search", "recall", "memory_search")[n % 3]
                if call(http, tool, {"query": query}) is not None:
                    tally("reads")
                n += 1

    def writer(slot: int) -> None:
        with httpx.Client(headers=json_headers(token), timeout=60) as http:
            n = 0
            while time.monotonic() < stop_at:
                body = f"The {QUERIES[n % len(QUERIES)]} note {slot}-{n}."
                made = call(http, "remember", {"title": f"note {slot}-{n}", "body": body})
                retract = {"id": (made or {}).get("memory_id"), "reason": "race"}
                if retract["id"] and call(http, "memory_retract", retract) is not None:
                    tally("writes")
                n += 1

    try:
        threads = [threading.Thread(target=reader, args=(i,)) for i in range(8)]
        threads += [threading.Thread(target=writer, args=(i,)) for i in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(SECONDS + 120)
    finally:
        output = stop_server(server)

    assert outcomes["internal_errors"] == 0, examples
    assert outcomes["other"] == 0, examples
    assert outcomes["reads"] > 8, outcomes
    assert outcomes["writes"] > 2, outcomes
    assert "Traceback" not in output
