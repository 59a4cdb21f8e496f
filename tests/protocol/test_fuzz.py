"""Fuzzing a real `cairn serve` (issue 18): never a 5xx, never -32603, another team untouched.

Two generators, both seeded so a failure replays:

- schema-guided: for every tool in `tools/list`, arguments generated from its `inputSchema`,
  then mutated (hostile strings, boundary numbers, odd keys, deep nesting, wrong types,
  missing and unknown arguments);
- raw bodies: nesting depth, invalid and hostile Unicode, broken escapes, sizes around the
  body limit, wrong JSON-RPC member types, truncations and byte flips of valid requests.

`make test` runs CAIRN_FUZZ_CASES (default 240) cases with CAIRN_FUZZ_SEED (default 18);
`make bench` runs a longer campaign. Failures list the seed, the case number and the body.
"""

from __future__ import annotations

import json
import os
import random
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.protocol.conftest import (
    DEV_TOKEN,
    LocalServer,
    free_port,
    mcp_headers,
    spawn_serve,
    wait_until_serving,
)

pytestmark = pytest.mark.protocol

CASES = int(os.environ.get("CAIRN_FUZZ_CASES", "240"))
SEED = int(os.environ.get("CAIRN_FUZZ_SEED", "18"))
MAX_BODY = 1_048_576

HOSTILE_STRINGS: list[str] = [
    "",
    " ",
    "plain text",
    "\udbf4",  # lone high surrogate
    "\uddf7x",  # lone low surrogate
    "\udbf4\uddf7",  # a valid pair
    "nul\x00inside",
    "\x01\x02\x1b[31m\x7f\x85",
    "\t\n\r",
    "\u202e\u200b\ufeff\ufffe\uffff",
    "🪨" * 50,
    "x" * 10_000,
    "é" * 70_000,
    "' OR 1=1 --",
    '"quoted" \\ backslash',
    'NEAR(a b) AND * OR "',  # FTS5 query syntax
    "../../etc/passwd",
    "%s%n{0}{}",
    "null",
    "0",
    "-1",
    "2026-13-45T99:99:99Z",
    "1970-01-01T00:00:00Z",
    "9999-12-31T23:59:59Z",
    "tok_0000000000000000",
    "mem_0000000000000000",
]
HOSTILE_NUMBERS: list[Any] = [
    0,
    -1,
    1,
    2**31,
    2**63,
    -(2**63) - 1,
    10**38,
    10**40,
    10**300,
    0.5,
    -0.0,
    1e-200,
    1e300,
    1.7976931348623157e308,
    5e-324,
    True,
]
HOSTILE_KEYS: list[str] = ["", "\x00", "a\x01b", "\udbf4", "k" * 300, "$where", "__proto__"]


def _nested(depth: int, leaf: Any, kind: str) -> Any:
    value = leaf
    for _ in range(depth):
        value = [value] if kind == "array" else {"n": value}
    return value


@dataclass
class SchemaFuzzer:
    """Arguments for a JSON Schema, valid most of the time and hostile some of the time."""

    rng: random.Random
    root: dict[str, Any]
    defs: dict[str, Any] = field(init=False)

    def __post_init__(self) -> None:
        self.defs = self.root.get("$defs", {})

    def _resolve(self, schema: dict[str, Any]) -> dict[str, Any]:
        while "$ref" in schema:
            schema = self.defs.get(schema["$ref"].rsplit("/", 1)[-1], {})
        return schema

    def hostile(self) -> Any:
        rng = self.rng
        choice = rng.randrange(7)
        if choice == 0:
            return rng.choice(HOSTILE_STRINGS)
        if choice == 1:
            return rng.choice(HOSTILE_NUMBERS)
        if choice == 2:
            return {rng.choice(HOSTILE_KEYS): rng.choice([*HOSTILE_STRINGS, 1, None])}
        if choice == 3:
            kind = rng.choice(["array", "object"])
            return _nested(rng.choice([5, 31, 32, 33, 40, 60]), rng.choice([1, "x"]), kind)
        if choice == 4:
            return [rng.choice(HOSTILE_STRINGS) for _ in range(rng.choice([0, 1, 101, 1000]))]
        if choice == 5:
            return None
        return rng.choice([[], {}, True, "[]", "{}"])

    def value(self, schema: dict[str, Any], depth: int = 0) -> Any:
        rng = self.rng
        schema = self._resolve(schema)
        if rng.random() < 0.12 or depth > 6:
            return self.hostile()
        if "anyOf" in schema:
            return self.value(rng.choice(schema["anyOf"]), depth + 1)
        if "enum" in schema:
            return rng.choice(schema["enum"])
        if "const" in schema:
            return schema["const"]
        kind = schema.get("type")
        if kind == "string":
            if schema.get("format") == "date-time":
                return rng.choice(["2030-01-01T00:00:00Z", "2001-01-01T00:00:00Z"])
            top = schema.get("maxLength", 40)
            return "".join(rng.choice("abcxyz -_é🪨") for _ in range(rng.randint(1, min(top, 40))))
        if kind == "integer":
            low, high = schema.get("minimum", -5), schema.get("maximum", 1000)
            return rng.choice([low, high, low - 1, high + 1, rng.randint(low, high)])
        if kind == "number":
            return rng.choice([0.0, 1.5, -2.25, 1e10, schema.get("minimum", 0)])
        if kind == "boolean":
            return rng.random() < 0.5
        if kind == "null":
            return None
        if kind == "array":
            items = schema.get("items", {})
            return [self.value(items, depth + 1) for _ in range(rng.randint(0, 3))]
        if kind == "object" or "properties" in schema:
            return self.arguments(schema, depth + 1)
        return self.hostile()

    def arguments(self, schema: dict[str, Any], depth: int = 0) -> dict[str, Any]:
        rng = self.rng
        schema = self._resolve(schema)
        properties: dict[str, Any] = schema.get("properties", {})
        required = set(schema.get("required", []))
        result: dict[str, Any] = {}
        for name, sub in properties.items():
            if (name in required and rng.random() < 0.95) or rng.random() < 0.4:
                result[name] = self.value(sub, depth)
        if not properties and rng.random() < 0.7:
            result[rng.choice(["a", "b", "note"])] = self.value({}, depth + 1)
        if rng.random() < 0.05:
            result[rng.choice(["unknown", "agent_id", "team"])] = "sneaky"
        return result


def _request(method: str, params: dict[str, Any] | None = None, request_id: Any = 1) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message).encode()


def _raw_bodies(rng: random.Random, sample_call: bytes) -> list[Callable[[], bytes]]:
    """Generators of hostile request bodies."""

    def deep_arrays() -> bytes:
        depth = rng.choice([65, 1_000, 100_000, 500_000])
        return b"[" * depth + b"]" * rng.choice([0, depth])

    def deep_objects() -> bytes:
        depth = rng.choice([65, 1_000, 100_000])
        return b'{"a":' * depth + b"1" + b"}" * depth

    def deep_params() -> bytes:
        depth = rng.choice([30, 60, 1_000, 200_000])
        inner = b'{"p":' * depth + b"1" + b"}" * depth
        return b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":' + inner + b"}"

    def lone_surrogate_in_envelope() -> bytes:
        return rng.choice(
            [
                b'{"jsonrpc":"2.0","id":"\\udbf4","method":"ping"}',
                b'{"jsonrpc":"2.0","id":1,"method":"pi\\ud800ng"}',
                b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"memory_\\udfff"}}',
                b'{"jsonrpc":"2.\\udbf4","id":1,"method":"ping"}',
                b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"\\udbf4":1}}',
            ]
        )

    def invalid_utf8() -> bytes:
        garbage = rng.choice([b"\xff", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\x80"])
        return _request("ping", {"x": "PLACEHOLDER"}).replace(b"PLACEHOLDER", garbage)

    def bad_escapes() -> bytes:
        escape = rng.choice([b"\\u12", b"\\x41", b"\\", b"\\uZZZZ", b"\\ud800\\u0041", b"\\U0001"])
        return _request("ping", {"x": "PLACEHOLDER"}).replace(b"PLACEHOLDER", escape)

    def odd_numbers() -> bytes:
        number = rng.choice([b"NaN", b"Infinity", b"-Infinity", b"1e999", b"-1e999", b"1" * 5000])
        return b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":' + number + b"}}"

    def sizes() -> bytes:
        size = rng.choice([MAX_BODY - 200, MAX_BODY + 1, 2 * MAX_BODY])
        filler = "y" * max(size - 200, 0)
        return _request(
            "tools/call",
            {"name": "memory_search", "arguments": {"query": filler[: size - 200]}},
        )

    def wrong_types() -> bytes:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
        member = rng.choice(["jsonrpc", "id", "method", "params"])
        message[member] = rng.choice([None, 1.5, [], {}, True, "", -(2**70), "x" * 5000])
        return json.dumps(message).encode()

    def not_an_object() -> bytes:
        return rng.choice([b"", b"null", b"1", b'"s"', b"[]", b"[1,2]", b"{}", b"\xef\xbb\xbf{}"])

    def truncated() -> bytes:
        return sample_call[: rng.randrange(len(sample_call))]

    def flipped() -> bytes:
        data = bytearray(sample_call)
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        return bytes(data)

    return [
        deep_arrays,
        deep_objects,
        deep_params,
        lone_surrogate_in_envelope,
        invalid_utf8,
        bad_escapes,
        odd_numbers,
        sizes,
        wrong_types,
        not_an_object,
        truncated,
        flipped,
    ]


@dataclass
class Teams:
    server: LocalServer
    fuzz_token: str
    canary_token: str


def _start_logging_to_file(data_dir: Path) -> LocalServer:
    """A `cairn serve` whose output goes to a file: thousands of calls log more than a pipe
    holds, and a full pipe nobody reads would block the server's logging, and so the server."""
    port = free_port()
    log = data_dir.parent / f"{data_dir.name}.log"
    process = spawn_serve(data_dir, port, log, log_mode="w")
    wait_until_serving(process, port, log)
    return LocalServer(port, data_dir, DEV_TOKEN, process)


@pytest.fixture(scope="module")
def teams(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Teams]:
    server = _start_logging_to_file(tmp_path_factory.mktemp("cairn-fuzz"))
    try:
        fuzz = server.create_token("fuzz", "admin", "fuzzer", "--rate-limit", "100000")
        canary = server.create_token("canary", "admin", "canary", "--rate-limit", "100000")
        yield Teams(server, fuzz, canary)
    finally:
        server.process.send_signal(signal.SIGINT)
        server.process.wait(timeout=60)


def _post(client: httpx.Client, teams: Teams, body: bytes, token: str) -> httpx.Response:
    return client.post(
        teams.server.url,
        content=body,
        headers=mcp_headers(token),
        timeout=120,
    )


def _tool(client: httpx.Client, teams: Teams, name: str, arguments: dict[str, Any]) -> Any:
    body = _request("tools/call", {"name": name, "arguments": arguments})
    response = _post(client, teams, body, teams.canary_token)
    assert response.status_code == 200, response.text
    result = response.json()["result"]
    assert not result.get("isError"), result
    return result["structuredContent"]


def _canary_state(client: httpx.Client, teams: Teams) -> dict[str, Any]:
    """Everything the canary team can read back, minus nothing: it must not change."""
    return {
        "memory": _tool(client, teams, "memory_get", {"key": "canary"}),
        "memories": _tool(client, teams, "memory_search", {"query": "canary fact"}),
        "events": _tool(client, teams, "event.poll", {}),
        "tasks": _tool(client, teams, "task.list", {"limit": 100}),
        "handoffs": _tool(client, teams, "list_handoffs", {}),
    }


def _tools(client: httpx.Client, teams: Teams) -> list[dict[str, Any]]:
    tools: list[dict[str, Any]] = []
    params: dict[str, Any] = {}
    while True:
        page = _post(client, teams, _request("tools/list", params), teams.fuzz_token).json()
        tools.extend(page["result"]["tools"])
        if "nextCursor" not in page["result"]:
            return tools
        params = {"cursor": page["result"]["nextCursor"]}


def _seed_canary(client: httpx.Client, teams: Teams) -> None:
    _tool(client, teams, "memory_put", {"key": "canary", "content": "the canary fact"})
    _tool(client, teams, "event.publish", {"event_type": "canary", "payload": {"alive": True}})
    _tool(client, teams, "task.create", {"name": "canary task", "input_data": {"n": 1}})
    handoff = (
        "## Start & intent\nwatch\n## Journey\nquiet\n## Current state\nalive\n"
        "## What’s left\nnothing\n## Open questions\nnone\n"
    )
    _tool(client, teams, "store_handoff", {"title": "canary", "document_md": handoff})


def test_fuzzed_requests_never_get_a_5xx_or_an_internal_error(teams: Teams) -> None:
    rng = random.Random(SEED)
    failures: list[str] = []
    slowest = (0.0, "")
    with httpx.Client() as client:
        _seed_canary(client, teams)
        canary_before = _canary_state(client, teams)
        tools = _tools(client, teams)
        sample_call = _request(
            "tools/call", {"name": "memory_put", "arguments": {"key": "k", "content": "c"}}
        )
        raw = _raw_bodies(rng, sample_call)
        for case in range(CASES):
            if case % 3 == 2:
                generator = rng.choice(raw)
                body = generator()
                label = f"raw:{generator.__name__}"
            else:
                tool = rng.choice(tools)
                arguments: Any = SchemaFuzzer(rng, tool["inputSchema"]).arguments(
                    tool["inputSchema"]
                )
                if rng.random() < 0.03:
                    arguments = rng.choice([[], "args", 1, None])
                body = _request("tools/call", {"name": tool["name"], "arguments": arguments})
                label = f"tool:{tool['name']}"
            started = time.perf_counter()
            try:
                response = _post(client, teams, body, teams.fuzz_token)
            except httpx.TimeoutException:
                failures.append(f"case {case} ({label}): no answer; body {body[:300]!r}")
                continue
            elapsed = time.perf_counter() - started
            slowest = max(slowest, (elapsed, label))
            problem = _problem(response)
            if problem:
                failures.append(f"case {case} ({label}): {problem}; body {body[:300]!r}")
        canary_after = _canary_state(client, teams)
    print(f"\nfuzz: {CASES} cases, seed {SEED}, slowest {slowest[0]:.2f} s ({slowest[1]})")
    assert failures == [], f"seed {SEED}:\n" + "\n".join(failures[:20])
    assert canary_after == canary_before


def _problem(response: httpx.Response) -> str | None:
    """What is wrong with a reply to hostile input, or None."""
    if response.status_code >= 500:
        return f"HTTP {response.status_code}: {response.text[:200]}"
    if response.status_code == 202 or not response.content:
        return None
    try:
        payload = response.json()
    except ValueError:
        return f"HTTP {response.status_code} with a body that is not JSON: {response.text[:200]}"
    error = payload.get("error") if isinstance(payload, dict) else None
    if isinstance(error, dict) and error.get("code") == -32603:
        return f"internal error -32603: {error}"
    return None


def test_the_fuzz_generators_are_deterministic_for_a_seed(tmp_path: Path) -> None:
    schema = {
        "type": "object",
        "properties": {"key": {"type": "string"}, "limit": {"type": "integer", "maximum": 9}},
        "required": ["key"],
    }
    first = [SchemaFuzzer(random.Random(7), schema).arguments(schema) for _ in range(5)]
    second = [SchemaFuzzer(random.Random(7), schema).arguments(schema) for _ in range(5)]
    assert first == second
