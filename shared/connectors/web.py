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
- SSRF: every host (and every redirect's) is resolved first, and a private, loopback,
  link-local or reserved address is refused, unless `allow_private` (local mode only).
"""

from __future__ import annotations

import ipaddress
import re
import socket
import time
import urllib.error
import urllib.request
import urllib.robotparser
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


def _private(host: str) -> bool:
    """Does `host` resolve to any address that is not public?"""
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False  # unresolvable: the request fails on its own
    for info in infos:
        address = ipaddress.ip_address(info[4][0])
        if (
            address.is_private
            or address.is_loopback
            or address.is_link_local
            or address.is_reserved
            or address.is_multicast
            or address.is_unspecified
        ):
            return True
    return False


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

    def __init__(self, settings: WebSettings, *, local: bool) -> None:
        self._settings = settings
        self._allow_private = settings.allow_private and local
        given = [*settings.urls, *([settings.sitemap] if settings.sitemap else [])]
        hosts = settings.allowed_hosts or [urlsplit(u).hostname or "" for u in given]
        self._hosts = {h.lower() for h in hosts if h}
        self._opener = urllib.request.build_opener(_NoRedirects)
        self._robots: dict[str, urllib.robotparser.RobotFileParser] = {}
        self._deadline = time.monotonic() + settings.max_seconds
        self._bytes = 0
        self._checked_hosts: dict[str, bool] = {}

    def _check_host(self, url: str) -> None:
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
        if parts.scheme not in ("http", "https") or not host:
            raise _Refused("not_http")
        if host not in self._hosts:
            raise _Refused("other_host")
        if not self._allow_private:
            if host not in self._checked_hosts:
                self._checked_hosts[host] = _private(host)
            if self._checked_hosts[host]:
                raise _Refused("private_address")

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
