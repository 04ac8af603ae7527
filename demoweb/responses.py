"""HTTP responses of the demo web: the Response the server writes, error pages, and the
validators (ETag, Last-Modified) and conditional-request rule every generated resource uses."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime, timezone
from email.utils import format_datetime, parsedate_to_datetime
from typing import Iterable, Mapping

from .page_shell import simple_page

HTML_TYPE = "text/html; charset=utf-8"
PLAIN_TYPE = "text/plain; charset=utf-8"
XML_TYPE = "application/xml; charset=utf-8"
CACHE_CONTROL = "max-age=3600"
# Headers a 304 repeats from the full answer.
_NOT_MODIFIED_HEADERS = ("ETag", "Last-Modified", "Cache-Control")


@dataclass
class Response:
    """One HTTP response. Treat as immutable: cached instances are shared between requests.

    Hostile endpoints use more fields, interpreted by the server:
      stream       body chunks produced lazily instead of `body` (a fresh iterator per
                   response). Without a Content-Length header it is sent chunked (HTTP/1.1)
                   or close-delimited (HTTP/1.0); it may never end.
      bytes_per_s  send the body (or stream) no faster than this (a slow drip).
      hang         read the request and never answer, until the client closes.
      delay_s      wait this long before answering (a slow but well-behaved server).
      logged_late_s  the access log stamps the answer's end this long after it was handed to
                   the socket, as a busy server that logs after its write returns does (its
                   log shows the client's next request sooner after the end than it was).
    A response with stream, bytes_per_s or hang is written with backpressure, closes the
    connection after, and stop() cancels it instead of waiting for it.
    """

    status: int
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""
    stream: Iterable[bytes] | None = None
    bytes_per_s: float | None = None
    hang: bool = False
    delay_s: float = 0.0
    logged_late_s: float = 0.0

    @property
    def streaming(self) -> bool:
        return self.hang or self.stream is not None or self.bytes_per_s is not None

    def header(self, name: str) -> str | None:
        """First value of a header, matched case-insensitively (handy in tests)."""
        lname = name.lower()
        for key, value in self.headers:
            if key.lower() == lname:
                return value
        return None


def http_date(moment: datetime) -> str:
    """RFC 7231 IMF-fixdate, e.g. 'Thu, 01 Jan 2026 00:00:00 GMT'."""
    return format_datetime(moment, usegmt=True)


def body_response(body: bytes, ctype: str = HTML_TYPE, extra: Iterable[tuple[str, str]] = (),
                  status: int = 200) -> Response:
    """A response with Content-Type and Content-Length, plus `extra` headers."""
    headers = [("Content-Type", ctype), ("Content-Length", str(len(body)))]
    return Response(status, headers + list(extra), body)


def error_response(status: int, message: str, extra_headers: Iterable[tuple[str, str]] = ()) -> Response:
    """A small HTML error page; the server uses it too (400, 405, ...)."""
    body = simple_page(f"{status} {message}", "<p>The demo web could not serve this request.</p>",
                       heading=message)
    return body_response(body, extra=extra_headers, status=status)


def robots_allow_all(hostname: str, *extra_lines: str) -> Response:
    """An allow-all robots.txt for the special hosts (extra lines appended)."""
    lines = [f"# robots.txt for {hostname}", "User-agent: *", "Disallow:", *extra_lines]
    return body_response(("\n".join(lines) + "\n").encode("utf-8"), PLAIN_TYPE)


def etag_of(body: bytes) -> str:
    return '"' + hashlib.blake2b(body, digest_size=10).hexdigest() + '"'


@dataclass(frozen=True)
class Resource:
    """A rendered 200 response plus what conditional requests compare against (None: the
    server sends no such validator, so it cannot match)."""

    response: Response
    etag: str | None
    last_modified: datetime | None


def make_resource(body: bytes, ctype: str, last_modified: datetime | None, *,
                  etag: bool = True) -> Resource:
    """A 200 with Content-Type, Content-Length, the validators asked for, and Cache-Control.
    etag=False sends no ETag, last_modified=None no Last-Modified."""
    tag = etag_of(body) if etag else None
    headers = [("Content-Type", ctype), ("Content-Length", str(len(body)))]
    if tag is not None:
        headers.append(("ETag", tag))
    if last_modified is not None:
        headers.append(("Last-Modified", http_date(last_modified)))
    headers.append(("Cache-Control", CACHE_CONTROL))
    return Resource(Response(200, headers, body), tag, last_modified)


def etag_matches(header: str, etag: str) -> bool:
    """If-None-Match uses weak comparison: W/"x" matches "x"; '*' matches anything."""
    if header.strip() == "*":
        return True
    for candidate in header.split(","):
        candidate = candidate.strip()
        if candidate.startswith("W/"):
            candidate = candidate[2:]
        if candidate == etag:
            return True
    return False


def not_modified(resource: Resource, headers: Mapping[str, str]) -> bool:
    """RFC 9110 §13.1: If-None-Match when present (If-Modified-Since is then ignored), else
    If-Modified-Since against Last-Modified. A validator the server does not send never matches."""
    inm = headers.get("if-none-match")
    if inm is not None:
        return resource.etag is not None and etag_matches(inm, resource.etag)
    ims = headers.get("if-modified-since")
    if ims is None or resource.last_modified is None:
        return False
    try:
        since = parsedate_to_datetime(ims)
    except (TypeError, ValueError, IndexError):
        return False
    if since.tzinfo is None:
        since = since.replace(tzinfo=timezone.utc)
    return since >= resource.last_modified


def answer(resource: Resource | None, headers: Mapping[str, str]) -> Response:
    """A generated resource as served: 404 if missing, 304 if the client's copy is current."""
    if resource is None:
        return error_response(404, "Not Found")
    if not_modified(resource, headers):
        return Response(304, [(k, v) for k, v in resource.response.headers
                              if k in _NOT_MODIFIED_HEADERS], b"")
    return resource.response
