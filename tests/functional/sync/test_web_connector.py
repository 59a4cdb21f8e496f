"""The web connector against a local HTTP server: a sitemap, robots.txt, a redirect loop, an
oversized page, a 500, another host, ETag revalidation (304) and sitemap lastmod; loopback is
refused unless `allow_private` (local mode only)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from shared.connectors.web import html_text
from tests.functional.sync.conftest import Connectors

PAGE_A = (
    "<html><head><title>Ferry times</title><style>p{color:red}</style></head><body>"
    "<nav>Home | About</nav><h1>Ferry</h1><p>The ferry leaves at nine &amp; returns at six."
    "</p><script>track()</script></body></html>"
)


class _Site(BaseHTTPRequestHandler):
    requests: list[str] = []
    port = 0

    def _send(self, status: int, body: bytes = b"", **headers: str) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self.requests.append(self.path)
        base = f"http://127.0.0.1:{self.port}"
        if self.path == "/robots.txt":
            self._send(200, b"User-agent: *\nDisallow: /private/\n", Content_Type="text/plain")
        elif self.path == "/sitemap.xml":
            pages = ["/a.html", "/loop", "/big.html", "/error", "/private/x.html"]
            urls = "".join(f"<url><loc>{base}{p}</loc></url>" for p in pages)
            urls += f"<url><loc>{base}/b.txt</loc><lastmod>2026-11-01</lastmod></url>"
            urls += "<url><loc>https://elsewhere.example/page</loc></url>"
            body = (
                '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/'
                f'sitemap/0.9">{urls}</urlset>'
            )
            self._send(200, body.encode(), Content_Type="application/xml")
        elif self.path == "/a.html":
            if self.headers.get("If-None-Match") == '"v1"':
                self._send(304)
            else:
                self._send(200, PAGE_A.encode(), Content_Type="text/html", ETag='"v1"')
        elif self.path == "/b.txt":
            self._send(200, b"Plain notes: the kiln fires at dawn.", Content_Type="text/plain")
        elif self.path in ("/loop", "/loop2"):
            self._send(302, Location="/loop2" if self.path == "/loop" else "/loop")
        elif self.path == "/big.html":
            self._send(200, b"<p>" + b"x" * 5000 + b"</p>", Content_Type="text/html")
        else:
            self._send(500)

    def log_message(self, format: str, *args: object) -> None:
        return None


@pytest.fixture
def site() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Site)
    _Site.port = server.server_address[1]
    _Site.requests = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{_Site.port}"
    server.shutdown()
    server.server_close()


def test_a_sitemap_is_read_within_its_bounds_and_revalidated(
    connectors: Connectors, site: str
) -> None:
    connectors.sync.connector_add(
        "local",
        name="site",
        kind="web",
        config={"sitemap": f"{site}/sitemap.xml", "allow_private": True, "max_file_bytes": 2000},
    )

    (first,) = connectors.run("site")["connectors"]
    requested = list(_Site.requests)
    _Site.requests.clear()
    (second,) = connectors.run("site")["connectors"]

    assert first["success"], first
    assert connectors.source_ids("site") == {f"{site}/a.html", f"{site}/b.txt"}
    counts = connectors.status("site")["counts"]
    assert "/private/x.html" not in requested  # robots.txt
    assert requested.count("/loop") + requested.count("/loop2") == 6  # max_redirects 5, then stop
    for reason in ("robots", "other_host", "redirects", "failed", "too_large"):
        assert f"1 {reason.replace('_', ' ')}" in first["message"], (reason, first["message"])
    assert counts["skipped_robots"] == 1
    entities = {e.source_id: e for e in connectors.search.documents.iter_entities("local")}
    assert entities[f"{site}/a.html"].title == "Ferry times"
    assert connectors.found("ferry leaves nine", "site") == [f"{site}/a.html"]
    page = connectors.search.get_entity(
        "local", entities[f"{site}/a.html"].id, include_memory=False
    )
    assert page is not None
    text = "".join(c.content for c in page.chunks)
    assert "track()" not in text
    assert "color" not in text
    assert "Home | About" not in text
    # Second sync: a.html answered 304, b.txt not asked for (its lastmod is unchanged).
    assert second["success"], second
    assert "/a.html" in _Site.requests
    assert "/b.txt" not in _Site.requests
    assert second["stats"]["chunks_written"] == 0
    assert connectors.source_ids("site") == {f"{site}/a.html", f"{site}/b.txt"}


def test_loopback_is_refused_without_the_local_override(connectors: Connectors, site: str) -> None:
    connectors.sync.connector_add(
        "local", name="site", kind="web", config={"urls": [f"{site}/a.html"]}
    )
    connectors.sync.connector_add(
        "local", name="map", kind="web", config={"sitemap": f"{site}/sitemap.xml"}
    )

    results = {c["source"]: c for c in connectors.run()["connectors"]}

    assert "1 private address" in results["site"]["message"]
    assert connectors.source_ids("site") == set()
    assert results["map"]["message"] == (
        f"connector 'map' (web): the sitemap {site}/sitemap.xml is refused (private_address)"
    )
    assert _Site.requests == []  # nothing was asked of the loopback server


def test_html_becomes_text_with_its_title() -> None:
    title, text = html_text(PAGE_A)
    assert title == "Ferry times"
    assert text == "Ferry\n\nThe ferry leaves at nine & returns at six."
