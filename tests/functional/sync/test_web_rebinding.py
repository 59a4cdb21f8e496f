"""The web connector connects to the address it checked: a name that resolves to a public
address and then (DNS rebinding) to loopback never reaches loopback, each redirect's hop is
checked again, and the name still goes in the Host header.

The resolver and the socket connection are the seams (what DNS and the network would answer);
"public" 93.184.216.34 is served by a local HTTP server the connection seam routes it to.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from shared.connectors.models import SourceItem, WebSettings
from shared.connectors.web import WebSource

PUBLIC = "93.184.216.34"


class _Site(BaseHTTPRequestHandler):
    seen: list[tuple[str, str]] = []

    def do_GET(self) -> None:
        self.seen.append((self.path, self.headers.get("Host", "")))
        if self.path == "/hop":
            self.send_response(302)
            self.send_header("Location", f"http://cdn.test:{self.server.server_address[1]}/page")
            body = b""
        elif self.path == "/page":
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            body = b"<title>Tides</title><p>The lighthouse keeper logs the tides.</p>"
        else:
            self.send_response(404)
            body = b""
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        return None


@pytest.fixture
def port() -> Iterator[int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Site)
    _Site.seen = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


class Network:
    """DNS answers per name (in turn; the last one repeats) and the connections opened."""

    def __init__(self, answers: dict[str, list[list[str]]]) -> None:
        self.answers = answers
        self.connected: list[tuple[str, int]] = []

    def resolve(self, host: str, port: int) -> list[str]:
        queue = self.answers[host]
        return queue.pop(0) if len(queue) > 1 else queue[0]

    def connect(self, address: tuple[str, int], *args: Any, **kwargs: Any) -> socket.socket:
        self.connected.append(address)
        if address[0] != PUBLIC:
            raise ConnectionRefusedError(f"the test network has no {address[0]}")
        return socket.create_connection(("127.0.0.1", address[1]), *args, **kwargs)


def _source(network: Network, urls: list[str], hosts: list[str] | None = None) -> WebSource:
    settings = WebSettings(urls=urls, allowed_hosts=hosts or [])
    return WebSource(settings, local=False, resolve=network.resolve, connect=network.connect)


def _read(source: WebSource, url: str) -> Any:
    listing = source.list(None)
    assert listing is not None
    assert [i.id for i in listing.items] == [url]
    return source.read(SourceItem(id=url, version=None, uri=url), None)


def test_a_public_name_is_read_at_the_address_checked_with_its_name_as_host(port: int) -> None:
    network = Network({"docs.test": [[PUBLIC]]})
    url = f"http://docs.test:{port}/page"

    fetched = _read(_source(network, [url]), url)

    assert fetched.title == "Tides"
    assert "lighthouse keeper" in (fetched.text or "")
    assert network.connected == [(PUBLIC, port), (PUBLIC, port)]  # robots.txt, the page
    assert _Site.seen == [("/robots.txt", f"docs.test:{port}"), ("/page", f"docs.test:{port}")]


def test_a_name_rebound_to_loopback_between_requests_is_refused_not_followed(port: int) -> None:
    # First lookup public (robots.txt), every later one loopback: the rebinding attack.
    network = Network({"docs.test": [[PUBLIC], ["127.0.0.1"]]})
    url = f"http://docs.test:{port}/page"

    fetched = _read(_source(network, [url]), url)

    assert fetched.skipped == "private_address"
    assert network.connected == [(PUBLIC, port)]  # never 127.0.0.1
    assert [path for path, _ in _Site.seen] == ["/robots.txt"]


def test_each_redirect_hop_is_checked_again(port: int) -> None:
    network = Network({"docs.test": [[PUBLIC]], "cdn.test": [["10.1.2.3"]]})
    url = f"http://docs.test:{port}/hop"

    fetched = _read(_source(network, [url], ["docs.test", "cdn.test"]), url)

    assert fetched.skipped == "private_address"
    assert all(address == (PUBLIC, port) for address in network.connected)
    assert [path for path, _ in _Site.seen] == ["/robots.txt", "/hop"]


def test_a_name_with_any_private_address_is_refused(port: int) -> None:
    network = Network({"docs.test": [[PUBLIC, "127.0.0.1"]]})
    url = f"http://docs.test:{port}/page"

    fetched = _read(_source(network, [url]), url)

    assert fetched.skipped == "private_address"
    assert network.connected == []
    assert _Site.seen == []


def test_https_connects_to_the_checked_address_and_sends_the_name_for_tls() -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    hello: list[bytes] = []

    def first_bytes() -> None:  # a TLS server's first read: the ClientHello, then hang up
        conn, _ = listener.accept()
        with conn:
            hello.append(conn.recv(4096))

    thread = threading.Thread(target=first_bytes, daemon=True)
    thread.start()
    network = Network({"docs.test": [[PUBLIC]]})
    source = _source(network, [f"https://docs.test:{port}/page"])

    fetched = source.read(SourceItem(id=f"https://docs.test:{port}/page", version=None), None)
    thread.join(10)
    listener.close()

    assert fetched.skipped == "failed"  # no TLS server there
    assert network.connected == [(PUBLIC, port)]
    assert b"docs.test" in hello[0]  # SNI: the certificate is asked for, and checked, by name
