"""Bodies are bounded while they are read, on every route of `cairn serve`: a declared length
past the limit is refused with 413 before a byte of it is read, a body that grows past it
(chunked) is cut there, and the server's memory does not grow with what the client sends."""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.protocol.conftest import LocalServer, start_server, stop_server

HUGE = 256 * 1024 * 1024  # 256 MiB declared, never sent


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalServer]:
    started = start_server(tmp_path_factory.mktemp("bodies") / "data")
    yield started
    stop_server(started)


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def _status(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1])


def _exchange(port: int, head: str, send_body: Iterator[bytes]) -> tuple[int, float]:
    """Send `head` and body parts until the server answers; its status and seconds taken."""
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(head.encode())
        sock.setblocking(False)
        answer = b""
        for part in send_body:
            with contextlib.suppress(BlockingIOError):
                answer += sock.recv(65536)
            if b"\r\n" in answer:
                break
            try:
                sock.sendall(part)
            except (BlockingIOError, BrokenPipeError, ConnectionResetError):
                break
        sock.settimeout(30)  # an answer that never comes fails the test, not hangs it
        while b"\r\n" not in answer:
            more = sock.recv(65536)
            if not more:
                break
            answer += more
    return _status(answer), time.monotonic() - started


def _declared(path: str, content_type: str) -> str:
    return (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {content_type}\r\n"
        f"Accept: application/json\r\nContent-Length: {HUGE}\r\n\r\n"
    )


def _chunked(path: str, content_type: str) -> str:
    return (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {content_type}\r\n"
        "Accept: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    )


def _parts(count: int, size: int = 65536, chunked: bool = False) -> Iterator[bytes]:
    data = b"x" * size
    for _ in range(count):
        yield (f"{size:x}\r\n".encode() + data + b"\r\n") if chunked else data


@pytest.mark.protocol
@pytest.mark.parametrize(
    ("path", "content_type"),
    [
        ("/mcp", "application/json"),
        ("/mcp/all", "application/json"),
        ("/ingest/events", "application/json"),
        ("/console/login", "application/x-www-form-urlencoded"),
        ("/_local/tokens", "application/json"),
    ],
)
def test_a_256_mib_declared_body_is_refused_with_413_before_it_is_read(
    server: LocalServer, path: str, content_type: str
) -> None:
    before = _rss_kib(server.process.pid)
    # At most 4 MiB is offered: the answer must come long before the 256 MiB it declared.
    status, _ = _exchange(server.port, _declared(path, content_type), _parts(64))
    assert status == 413
    assert _rss_kib(server.process.pid) - before < 32 * 1024
    assert _rss_kib(server.process.pid) < 300 * 1024  # the bar: under 300 MB


@pytest.mark.protocol
@pytest.mark.parametrize(
    ("path", "content_type"),
    [("/mcp", "application/json"), ("/console/login", "application/x-www-form-urlencoded")],
)
def test_a_chunked_body_is_cut_at_the_limit_and_memory_stays_flat(
    server: LocalServer, path: str, content_type: str
) -> None:
    before = _rss_kib(server.process.pid)
    for _ in range(3):
        status, _ = _exchange(server.port, _chunked(path, content_type), _parts(256, chunked=True))
        assert status == 413
    assert _rss_kib(server.process.pid) - before < 32 * 1024
    assert server.cli("tokens", "list", "--team", "local").returncode == 0


@pytest.mark.protocol
def test_a_console_form_past_the_forms_limit_is_413_not_500(server: LocalServer) -> None:
    # Larger than the console's form limit (256 KiB), within the server's (1 MiB)
    body = b"token=" + b"a" * 400_000
    head = (
        "POST /console/login HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        "Content-Type: application/x-www-form-urlencoded\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    status, _ = _exchange(server.port, head, iter([body]))
    assert status == 413
