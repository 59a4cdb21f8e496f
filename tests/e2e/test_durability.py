"""Every acknowledged write survives: poisoned inputs, SIGTERM and Ctrl-C (issue 18, items 1 and 5).

Each test runs a real `cairn serve` in its own process group with a temporary CAIRN_DATA_DIR,
signals the group as a terminal or a process manager would, starts the server again on the same
folder and looks for every write it acknowledged.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.jsonrpc import tools_call
from tests.protocol.conftest import DEV_TOKEN, free_port, spawn_serve, wait_until_serving

pytestmark = pytest.mark.protocol

HEADERS = {
    "Authorization": f"Bearer {DEV_TOKEN}",
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
}


@dataclass
class Serving:
    process: subprocess.Popen[str]
    url: str
    log: Path

    def stop(self, sig: signal.Signals) -> str:
        """Signal the whole process group, as Ctrl-C in a terminal or `kill -TERM -pgid` does;
        returns what the server printed."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, sig)
        self.process.wait(timeout=60)
        return self.log.read_text()


_started: list[subprocess.Popen[str]] = []


@pytest.fixture(autouse=True)
def _no_server_outlives_its_test() -> Iterator[None]:
    yield
    while _started:
        process = _started.pop()
        if process.poll() is None:  # a test failed before stopping it
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=60)


def _serve(data_dir: Path, port: int) -> Serving:
    log = data_dir.parent / f"{data_dir.name}-{time.monotonic_ns()}.log"
    # Its own process group, which the test signals.
    process = spawn_serve(data_dir, port, log, log_mode="w", start_new_session=True)
    _started.append(process)
    wait_until_serving(process, port, log, kill=lambda: os.killpg(process.pid, signal.SIGKILL))
    return Serving(process, f"http://127.0.0.1:{port}/mcp", log)


def _rpc(client: httpx.Client, url: str, tool: str, arguments: Any) -> httpx.Response:
    body = tools_call(tool, arguments)
    return client.post(url, content=json.dumps(body).encode(), headers=HEADERS, timeout=60)


def _acknowledged(response: httpx.Response) -> dict[str, Any] | None:
    """The tool result when the server acknowledged the write, else None."""
    if response.status_code != 200 or "result" not in response.json():
        return None
    result: dict[str, Any] = response.json()["result"]
    return None if result.get("isError") else result


def _tool(client: httpx.Client, url: str, tool: str, arguments: Any) -> dict[str, Any]:
    response = _rpc(client, url, tool, arguments)
    assert response.status_code == 200, response.text
    payload = response.json()
    assert "error" not in payload, payload
    result: dict[str, Any] = payload["result"]
    assert not result.get("isError"), result
    return result


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_to_the_process_group_keeps_every_acknowledged_write(
    tmp_path: Path, sig: signal.Signals
) -> None:
    # Given four clients writing as fast as the server answers
    port = free_port()
    first = _serve(tmp_path, port)
    acknowledged: list[str] = []
    lock = threading.Lock()
    counter = itertools.count()
    enough = threading.Event()

    def writer() -> None:
        with httpx.Client() as client:
            while True:
                key = f"signal-{next(counter)}"
                try:
                    response = _rpc(
                        client, first.url, "memory_put", {"key": key, "content": f"fact {key}"}
                    )
                except httpx.HTTPError:
                    return  # the server has stopped listening
                if _acknowledged(response) is not None:
                    with lock:
                        acknowledged.append(key)
                        if len(acknowledged) >= 40:
                            enough.set()

    writers = [threading.Thread(target=writer) for _ in range(4)]
    for thread in writers:
        thread.start()
    assert enough.wait(timeout=120), "the server acknowledged fewer than 40 writes"

    # When the group is signalled while writes are in flight
    output = first.stop(sig)
    for thread in writers:
        thread.join(timeout=60)

    # Then it stops cleanly and every acknowledged write is there after a restart
    assert first.process.returncode == 0, output
    assert "cairn stopped" in output
    second = _serve(tmp_path, port)
    try:
        with httpx.Client() as client:
            missing = [
                key
                for key in acknowledged
                if _tool(client, second.url, "memory_get", {"key": key})["memory"] is None
            ]
    finally:
        second.stop(signal.SIGTERM)
    assert missing == [], f"{len(missing)} of {len(acknowledged)} acknowledged writes lost"


# Every shape issue 18 found poisoning the store, and its relatives: each must be refused.
_DEEP: dict[str, Any] = {}
_cursor = _DEEP
for _ in range(40):
    _cursor["level"] = {}
    _cursor = _cursor["level"]

REFUSED_BODIES: list[bytes] = [
    # lone surrogates as JSON escapes, in a value and in a key
    b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"memory_put",'
    b'"arguments":{"key":"poison-a","content":"\\udbf4 lone"}}}',
    b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"memory_put",'
    b'"arguments":{"key":"poison-b","content":"x","metadata":{"\\udbf4":1}}}}',
    # a surrogate encoded as UTF-8 bytes (CESU), which json.loads would let through
    b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"memory_put",'
    b'"arguments":{"key":"poison-c","content":"\xed\xaf\xb4"}}}',
    b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"memory_put",'
    b'"arguments":{"key":"poison-d","content":"x","metadata":{"n":NaN}}}}',
    b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"memory_put",'
    b'"arguments":{"key":"poison-e","content":"x","metadata":{"n":1e999}}}}',
    b"[" * 100_000,
]

REFUSED_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("memory_put", {"key": "poison-f", "content": "x", "metadata": {"": 1}}),
    ("memory_put", {"key": "poison-g", "content": "x", "metadata": {"a\x00": 1}}),
    ("memory_put", {"key": "poison-h", "content": "nul \x00 inside"}),
    ("memory_put", {"key": "poison-i", "content": "x", "metadata": {"n": 1e300}}),
    ("memory_put", {"key": "poison-j", "content": "x", "metadata": {"n": 10**40}}),
    ("memory_put", {"key": "poison-k", "content": "x", "metadata": _DEEP}),
    ("event.publish", {"event_type": "poison", "payload": {"": 1}}),
    ("event.publish", {"event_type": "poison", "payload": _DEEP}),
    ("task.create", {"name": "poison", "input_data": {"": 1}}),
    ("task.create", {"name": "poison", "input_data": {"n": -1e-200}}),
]

# Unusual but storable: each must be acknowledged and come back unchanged.
ACCEPTED_CONTENT = [
    "emoji 🪨 and a pair \U0010d1f7",
    "tab\tnewline\ncarriage\rreturn",
    "escape \x1b[31m and bell \x07",
    "right-to-left \u202e and zero-width \u200b",
    "x" * 50_000,
]


def test_refused_and_accepted_shapes_leave_every_acknowledged_write_after_a_restart(
    tmp_path: Path,
) -> None:
    port = free_port()
    first = _serve(tmp_path, port)
    memories: dict[str, dict[str, Any]] = {}
    events: list[str] = []
    tasks: list[str] = []
    with httpx.Client() as client:

        def ordinary_writes(round_number: int) -> None:
            key = f"kept-{round_number}"
            stored = _tool(client, first.url, "memory_put", {"key": key, "content": key})
            memories[key] = stored["memory"]
            event = _tool(
                client,
                first.url,
                "event.publish",
                {"event_type": "kept", "payload": {"round": round_number}},
            )
            events.append(event["event_id"])
            task = _tool(client, first.url, "task.create", {"name": f"kept-{round_number}"})
            tasks.append(task["id"])

        # Given refused shapes, each followed by ordinary writes that must not be lost
        rounds = itertools.count()
        for body in REFUSED_BODIES:
            response = client.post(first.url, content=body, headers=HEADERS, timeout=60)
            assert response.status_code == 400, response.text
            assert response.json()["error"]["code"] in (-32700, -32602)
            ordinary_writes(next(rounds))
        for tool, arguments in REFUSED_CALLS:
            result = _rpc(client, first.url, tool, arguments).json()["result"]
            assert result["isError"] is True
            assert result["error"]["field"] in arguments
            ordinary_writes(next(rounds))
        # And accepted unusual content, each acknowledged
        for index, content in enumerate(ACCEPTED_CONTENT):
            key = f"unusual-{index}"
            stored = _tool(
                client,
                first.url,
                "memory_put",
                {"key": key, "content": content, "metadata": {"depth": {"ok": [1, 2.5, None]}}},
            )
            memories[key] = stored["memory"]
            ordinary_writes(next(rounds))

    # When the server is stopped as a process manager would, and started again
    output = first.stop(signal.SIGTERM)
    assert first.process.returncode == 0, output
    second = _serve(tmp_path, port)
    try:
        with httpx.Client() as client:
            # Then every acknowledged memory, event and task is there, unchanged
            for key, memory in memories.items():
                assert _tool(client, second.url, "memory_get", {"key": key})["memory"] == memory
            polled = _tool(client, second.url, "event.poll", {"limit": 500})["events"]
            assert [e["event_id"] for e in polled if e["event_type"] == "kept"] == events
            listed = _tool(client, second.url, "task.list", {"limit": 100})["tasks"]
            assert set(tasks) <= {task["id"] for task in listed}
            # And no refused write left anything behind
            for key in (f"poison-{letter}" for letter in "abcdefghijk"):
                assert _tool(client, second.url, "memory_get", {"key": key})["memory"] is None
            assert _tool(client, second.url, "recall", {"query": "kept"})
            assert _tool(client, second.url, "memory_search", {"query": "kept"})
    finally:
        second.stop(signal.SIGTERM)
