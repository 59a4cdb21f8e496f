"""The `web` kind: pages from a sitemap or a list of URLs, on allowed hosts only.

- The hosts are the ones `allowed_hosts` names, else the hosts of the given URLs and sitemap.
- `robots.txt` is honoured (user agent `cairn`): a disallowed page is skipped and counted.
- Incremental: a page's ETag and Last-Modified are kept as its version and sent back
  (`If-None-Match`, `If-Modified-Since`); a 304 is not read again. A sitemap's `lastmod`, when
  present and unchanged, saves even the request.
- HTML becomes text (scripts, styles and navigation dropped; `<title>` is the title).
- Bounded: pages (`max_pages`), bytes per page (`max_file_bytes`) and in all
  (`max_total_bytes`), redirects (`max_redirects`, a loop ends there), and time
  (`max_seconds`). A page that fails (a 500, a timeout) is skipped and counted, and keeps what
  an earlier sync indexed of it.
- SSRF: every connection (each request, each redirect's hop) resolves its host once, refuses
  it when any of its addresses is private, loopback, link-local or reserved (unless
  `allow_private`, local mode only), and connects to the address it checked: the name is not
  looked up again between the check and the connection, so a DNS answer that changes
  meanwhile (rebinding) cannot point the request elsewhere. The Host header and TLS (SNI and
  the certificate's name) still use the name. No proxy is used (a proxy would connect in our
  place, to an address we never checked).
"""

from __future__ import annotations

import http.client
import ipaddress
import re
import socket
import ssl
import time
import urllib.error
import urllib.request
import urllib.robotparser
from collections.abc import Callable
from html.parser import HTMLParser
from typing import Any
from urllib.parse import urljoin, urlsplit
from xml.etree import ElementTree

from shared.connectors.models import (
    ConnectorError,
    Fetched,
    Listing,
    SourceItem,
    WebSettings,
    safe_url,
)

USER_AGENT = "cairn"
_REQUEST_TIMEOUT = 20.0
_SITEMAP_BYTES = 10 * 1024 * 1024
_BLOCKS = frozenset(
    {
        "p",
        "div",
        "br",
        "li",
        "tr",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "section",
        "article",
        "pre",
        "blockquote",
        "table",
        "ul",
        "ol",
        "dd",
        "dt",
        "hr",
    }
)
_DROPPED = frozenset({"script", "style", "noscript", "template", "svg", "nav", "head"})


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title: list[str] = []
        self._dropped = 0
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
        elif tag in _DROPPED:
            self._dropped += 1
        elif tag in _BLOCKS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        elif tag in _DROPPED:
            self._dropped = max(0, self._dropped - 1)
        elif tag in _BLOCKS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title.append(data)
        elif not self._dropped:
            self.parts.append(data)


def html_text(html: str) -> tuple[str | None, str]:
    """An HTML page's title and its readable text."""
    parser = _Text()
    parser.feed(html)
    parser.close()
    text = "".join(parser.parts)
    text = re.sub(r"[ \t\r\f\v]+", " ", text)
    text = re.sub(r"\n[ \n]*\n+", "\n\n", text).strip()
    title = " ".join("".join(parser.title).split()) or None
    return title, text


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # each hop is checked (host, address, count) before it is followed


class _Refused(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


# A host's addresses (`socket.getaddrinfo`'s), and a connection to one: the test seams.
Resolve = Callable[[str, int], list[str]]
Connect = Callable[..., socket.socket]


def resolve(host: str, port: int) -> list[str]:
    """Every address `host` resolves to (one lookup)."""
    return [str(info[4][0]) for info in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)]


def _public(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])  # an IPv6 zone is not the address
    return not (
        ip.is_private
        or ip.is_loopback
        or ip.is_link_local
        or ip.is_reserved
        or ip.is_multicast
        or ip.is_unspecified
    )


class _Pin:
    """Connects to an address of the host checked at that moment (never a second lookup)."""

    def __init__(self, resolve: Resolve, connect: Connect, *, allow_private: bool) -> None:
        self._resolve = resolve
        self._connect = connect
        self._allow_private = allow_private

    def opener(self, host: str) -> Connect:
        """`http.client`'s connection maker for `host`: it resolves, checks and connects."""

        def open_checked(address: tuple[str, int], *args: Any, **kwargs: Any) -> socket.socket:
            port = address[1]
            addresses = self._resolve(host, port)
            if not addresses:
                raise OSError(f"no address for {host}")
            if not self._allow_private and not all(_public(a) for a in addresses):
                raise _Refused("private_address")
            return self._connect((addresses[0], port), *args, **kwargs)

        return open_checked


class _PinnedHTTP(http.client.HTTPConnection):
    def __init__(self, host: str, *, pin: _Pin, **kwargs: Any) -> None:
        super().__init__(host, **kwargs)
        self._create_connection = pin.opener(self.host)


class _PinnedHTTPS(http.client.HTTPSConnection):
    def __init__(self, host: str, *, pin: _Pin, **kwargs: Any) -> None:
        super().__init__(host, **kwargs)  # TLS still checks and sends the name (SNI)
        self._create_connection = pin.opener(self.host)


class _PinnedHTTPHandler(urllib.request.HTTPHandler):
    def __init__(self, pin: _Pin) -> None:
        super().__init__()
        self._pin = pin

    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        connection: Any = _PinnedHTTP  # do_open passes it our keyword
        return self.do_open(connection, req, pin=self._pin)


class _PinnedHTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, pin: _Pin) -> None:
        self._tls = ssl.create_default_context()  # verifies the certificate for the name
        super().__init__(context=self._tls)
        self._pin = pin

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        connection: Any = _PinnedHTTPS
        return self.do_open(connection, req, context=self._tls, pin=self._pin)


def _version(etag: str | None, modified: str | None) -> str | None:
    if not etag and not modified:
        return None
    return f"etag={etag or ''}\nmodified={modified or ''}"


def _validators(version: str | None) -> tuple[str | None, str | None]:
    if not version or not version.startswith("etag="):
        return None, None
    etag_line, _, modified_line = version.partition("\n")
    return etag_line.removeprefix("etag=") or None, modified_line.removeprefix("modified=") or None


class WebSource:
    """`Source` over web pages."""

    def __init__(
        self,
        settings: WebSettings,
        *,
        local: bool,
        resolve: Resolve = resolve,
        connect: Connect = socket.create_connection,
    ) -> None:
        self._settings = settings
        given = [*settings.urls, *([settings.sitemap] if settings.sitemap else [])]
        hosts = settings.allowed_hosts or [urlsplit(u).hostname or "" for u in given]
        self._hosts = {h.lower() for h in hosts if h}
        pin = _Pin(resolve, connect, allow_private=settings.allow_private and local)
        self._opener = urllib.request.build_opener(
            urllib.request.ProxyHandler({}),  # no proxy: we connect to what we checked
            _PinnedHTTPHandler(pin),
            _PinnedHTTPSHandler(pin),
            _NoRedirects,
        )
        self._robots: dict[str, urllib.robotparser.RobotFileParser] = {}
        self._deadline = time.monotonic() + settings.max_seconds
        self._bytes = 0

    def _check_host(self, url: str) -> None:
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
        if parts.scheme not in ("http", "https") or not host:
            raise _Refused("not_http")
        if host not in self._hosts:
            raise _Refused("other_host")
        # Its address is checked as each connection opens (`_Pin`), where it is used.

    def _get(self, url: str, headers: dict[str, str], limit: int) -> tuple[int, Any, bytes, str]:
        """GET `url`, following redirects by hand: (status, headers, body up to `limit`+1
        bytes, final url)."""
        for _ in range(self._settings.max_redirects + 1):
            self._check_host(url)
            left = self._deadline - time.monotonic()
            if left <= 0:
                raise _Refused("time")
            # http(s) only: `_check_host` refused any other scheme above.
            request = urllib.request.Request(  # noqa: S310
                url, headers={"User-Agent": USER_AGENT, **headers}
            )
            try:
                with self._opener.open(request, timeout=min(_REQUEST_TIMEOUT, left)) as response:
                    body = response.read(limit + 1)
                    self._bytes += len(body)
                    return response.status, response.headers, body, url
            except urllib.error.HTTPError as exc:
                if exc.code in (301, 302, 303, 307, 308) and exc.headers.get("Location"):
                    url = urljoin(url, exc.headers["Location"])
                    continue
                return exc.code, exc.headers, b"", url
        raise _Refused("redirects")

    def _allowed_by_robots(self, url: str) -> bool:
        parts = urlsplit(url)
        origin = f"{parts.scheme}://{parts.netloc}"
        robots = self._robots.get(origin)
        if robots is None:
            robots = urllib.robotparser.RobotFileParser()
            try:
                status, _, body, _ = self._get(origin + "/robots.txt", {}, 512 * 1024)
            except (_Refused, OSError):
                status, body = 404, b""
            if status == 200:
                robots.parse(body.decode("utf-8", errors="replace").splitlines())
            elif status in (401, 403):  # as Google does: a locked robots.txt locks the site
                robots.parse(["User-agent: *", "Disallow: /"])
            else:  # none (404) or unreadable: everything may be read
                robots.parse([])
            self._robots[origin] = robots
        return robots.can_fetch(USER_AGENT, url)

    def _sitemap(self, url: str, depth: int = 0) -> list[tuple[str, str | None]]:
        try:
            status, _, body, _ = self._get(url, {}, _SITEMAP_BYTES)
        except _Refused as exc:
            raise ConnectorError(f"the sitemap {safe_url(url)} is refused ({exc.reason})") from None
        except OSError as exc:
            raise ConnectorError(
                f"cannot read the sitemap {safe_url(url)}: {type(exc).__name__}"
            ) from None
        if status != 200:
            raise ConnectorError(f"the sitemap {safe_url(url)} answered {status}")
        try:
            root = ElementTree.fromstring(body[:_SITEMAP_BYTES])  # noqa: S314 - no DTDs expanded
        except ElementTree.ParseError:
            raise ConnectorError(f"the sitemap {safe_url(url)} is not XML") from None
        pages: list[tuple[str, str | None]] = []
        for node in root:
            tag = node.tag.rsplit("}", 1)[-1]
            loc = next((c.text for c in node if c.tag.endswith("loc") and c.text), None)
            lastmod = next((c.text for c in node if c.tag.endswith("lastmod") and c.text), None)
            if loc is None:
                continue
            if tag == "sitemap" and depth == 0:  # a sitemap index: one level down
                pages += self._sitemap(loc.strip(), depth + 1)
            elif tag == "url":
                pages.append((loc.strip(), lastmod.strip() if lastmod else None))
        return pages

    def list(self, cursor: str | None) -> Listing | None:
        pages: list[tuple[str, str | None]] = [(u, None) for u in self._settings.urls]
        if self._settings.sitemap:
            pages += self._sitemap(self._settings.sitemap)
        skipped: dict[str, int] = {}
        items: list[SourceItem] = []
        seen: set[str] = set()
        for url, lastmod in pages:
            if url in seen:
                continue
            seen.add(url)
            if len(items) >= self._settings.max_pages:
                skipped["over_page_limit"] = skipped.get("over_page_limit", 0) + 1
                continue
            try:
                self._check_host(url)
            except _Refused as exc:
                skipped[exc.reason] = skipped.get(exc.reason, 0) + 1
                continue
            if not self._allowed_by_robots(url):
                skipped["robots"] = skipped.get("robots", 0) + 1
                continue
            version = f"lastmod={lastmod}" if lastmod else None
            items.append(SourceItem(id=url, version=version, uri=url))
        return Listing(items=items, skipped=skipped)

    def read(self, item: SourceItem, known: str | None) -> Fetched:
        limit = self._settings.max_file_bytes
        if self._bytes >= self._settings.max_total_bytes:
            return Fetched(data=None, version=known, skipped="over_byte_limit")
        etag, modified = _validators(known)
        headers = {}
        if etag:
            headers["If-None-Match"] = etag
        if modified:
            headers["If-Modified-Since"] = modified
        try:
            status, response_headers, body, _ = self._get(item.id, headers, limit)
        except _Refused as exc:
            return Fetched(data=None, version=known, skipped=exc.reason)
        except OSError:
            return Fetched(data=None, version=known, skipped="failed")
        if status == 304:
            return Fetched(data=None, version=known)
        if status != 200:
            return Fetched(data=None, version=known, skipped="failed")
        version = item.version or _version(
            response_headers.get("ETag"), response_headers.get("Last-Modified")
        )
        if len(body) > limit:
            return Fetched(data=body, version=version)  # counted too large
        content_type = (response_headers.get("Content-Type") or "text/html").lower()
        charset = response_headers.get_content_charset() or "utf-8"
        raw = body.decode(charset, errors="replace")
        if "html" in content_type:
            title, text = html_text(raw)
            return Fetched(data=None, text=text, title=title, version=version)
        if content_type.startswith("text/"):
            return Fetched(data=None, text=raw, version=version)
        return Fetched(data=body, version=version)  # judged (binary or text) by the sync

    def close(self) -> None:
        return None
