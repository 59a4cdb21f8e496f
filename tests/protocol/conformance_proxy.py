"""A loopback reverse proxy that adds `Authorization: Bearer <token>` to every request.

The MCP conformance suite has no way to present a token, and every request to cairn's /mcp needs
one. This proxy sits between the suite and a running `cairn serve`: it forwards method, path,
body and every end-to-end header unchanged (the original `Host` and `Origin` included, so the
DNS-rebinding scenario sees the server's own verdict), adds the bearer token, and streams the
server's status, headers and body back. Test-only; the server's auth is never switched off.
"""

from __future__ import annotations

import http.client
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

# RFC 9110 §7.6.1: connection-scoped headers a proxy must not forward.
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)


def _handler(upstream_host: str, upstream_port: int, token: str) -> type[BaseHTTPRequestHandler]:
    class ProxyHandler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            pass  # keep pytest output clean; the suite reports what it saw

        def _read_body(self) -> bytes:
            if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
                chunks = []
                while True:
                    size = int(self.rfile.readline().split(b";", 1)[0].strip(), 16)
                    if size == 0:
                        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                            pass  # trailers
                        return b"".join(chunks)
                    chunks.append(self.rfile.read(size))
                    self.rfile.readline()  # CRLF after each chunk
            length = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(length) if length else b""

        def _forward(self) -> None:
            body = self._read_body()
            connection_tokens = {
                t.strip().lower() for t in self.headers.get("Connection", "").split(",")
            }
            upstream = http.client.HTTPConnection(upstream_host, upstream_port, timeout=60)
            try:
                # skip_host: forward the client's own Host header, not the upstream address.
                upstream.putrequest(
                    self.command, self.path, skip_host=True, skip_accept_encoding=True
                )
                for name, value in self.headers.items():
                    lower = name.lower()
                    if lower in HOP_BY_HOP or lower in connection_tokens:
                        continue
                    if lower in ("content-length", "authorization"):
                        continue
                    upstream.putheader(name, value)
                if "Host" not in self.headers:
                    upstream.putheader("Host", f"{upstream_host}:{upstream_port}")
                upstream.putheader("Authorization", f"Bearer {token}")
                if body or self.command in ("POST", "PUT", "PATCH"):
                    upstream.putheader("Content-Length", str(len(body)))
                upstream.endheaders(body or None)
                reply = upstream.getresponse()
            except OSError as exc:
                self.send_error(502, f"conformance proxy: upstream unreachable ({exc})")
                upstream.close()
                return
            try:
                self._relay(reply)
            finally:
                upstream.close()

        def _relay(self, reply: http.client.HTTPResponse) -> None:
            self.send_response_only(reply.status, reply.reason)
            connection_tokens = {
                t.strip().lower() for t in (reply.getheader("Connection") or "").split(",")
            }
            length = reply.getheader("Content-Length")
            for name, value in reply.getheaders():
                lower = name.lower()
                if lower in HOP_BY_HOP or lower in connection_tokens or lower == "content-length":
                    continue
                self.send_header(name, value)
            no_body = self.command == "HEAD" or reply.status in (204, 304) or reply.status < 200
            if no_body:
                self.end_headers()
                return
            if length is not None:
                self.send_header("Content-Length", length)
                self.end_headers()
            else:
                # Unknown length (e.g. an SSE stream): chunked, flushed as it arrives.
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
            while True:
                chunk = reply.read1(65536)
                if not chunk:
                    break
                if length is None:
                    self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                else:
                    self.wfile.write(chunk)
                self.wfile.flush()
            if length is None:
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

        do_GET = do_POST = do_DELETE = do_PUT = do_PATCH = do_HEAD = do_OPTIONS = _forward

    return ProxyHandler


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        # Clients (the suite's Node process) drop kept-alive connections when they exit.
        pass


@contextmanager
def auth_proxy(upstream_url: str, token: str) -> Iterator[str]:
    """Serve the proxy on a free loopback port; yields the proxied URL (same path as upstream)."""
    parts = urlsplit(upstream_url)
    if not parts.hostname or not parts.port:
        raise ValueError(f"upstream URL needs an explicit host and port: {upstream_url}")
    server = _QuietServer(("127.0.0.1", 0), _handler(parts.hostname, parts.port, token))
    thread = threading.Thread(target=server.serve_forever, name="conformance-proxy", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}{parts.path}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
