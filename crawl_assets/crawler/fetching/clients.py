"""HTTP connections for the fetch engine: one keep-alive HTTP/1.1 connection per host being
fetched, kept in the host's VisitState; answers parsed by llhttp (Node.js's HTTP parser,
through httptools).

Not httpx, nor httpcore's pool: the engine sends one request at a time per host and needs
no cookies, auth, redirects, proxies or pooling, and those layers cost more CPU per page
than parsing the answer does. llhttp does the HTTP/1.1 framing (Content-Length, chunked,
close-delimited bodies, 1xx answers) in C, so a hostile server meets a parser that the
whole Node.js ecosystem hardens; it replaced h11, whose pure-Python parsing was the
largest cost of a request (bench/README.md). The
head is capped at MAX_HEAD_BYTES, the body at the caller's limit. The engine closes a host's
connection as soon as the host has nothing queued, so idle hosts hold nothing.

An https connection is a TCP connection first, then TLS over it (the host's name as SNI and
checked against its certificate, tls.py), each with connect_timeout_s of its own, so the
fetch log tells a host that never answered the connection (connect_timeout) from one that
never finished the handshake (tls_handshake_timeout) and from one that took the request and
stalled (timeout). Time limits move on by the event loop's own stalls (clock.ServerTimeLimit).
HTTP/1.1 only (README, "HTTP/2").
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import httptools

from ..vocabulary import StatusClass
from .clock import NO_STALLS, LoopStalls, ServerTimeLimit
from .tls import client_context, tls_failure

MAX_HEAD_BYTES = 100 * 1024  # status line and headers (as httpcore allows)
READ_CHUNK = 64 * 1024
_NO_BODY_STATUSES = frozenset({204, 304})  # answers that never have a body (besides 1xx)

# opener(ip, port) -> (reader, writer) of a TCP connection; tests pass canned streams.
Opener = Callable[[str, int], Awaitable[tuple[asyncio.StreamReader, asyncio.StreamWriter]]]


class ProtocolError(ValueError):
    """The server's answer is not HTTP/1.x the parser accepts, or breaks our limits."""


class ConnectFailed(OSError):
    """No connection to ask over: refused, reset, timed out, or the TLS handshake failed;
    status_class says which (CONNECT_ERROR, CONNECT_TIMEOUT, or one of TLS_FAILURES)."""

    def __init__(self, message: str, status_class: StatusClass = StatusClass.CONNECT_ERROR):
        super().__init__(message)
        self.status_class = status_class


@dataclass(frozen=True)
class Answer:
    """An HTTP answer as received: header names keep their case, the body its encoding."""

    http_version: str
    status: int
    reason: str
    headers: list[tuple[str, str]]
    body: bytes
    truncated: bool  # the body passed the limit and was cut there
    request: bytes = b""  # the request head as sent


async def open_tcp(ip: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection(ip, port, limit=READ_CHUNK)


def request_bytes(target: str, headers: list[tuple[str, str]]) -> bytes:
    """A GET request head. A header that could smuggle a line of its own (a stored ETag
    with a line break, say) is refused rather than sent."""
    lines = [f"GET {target} HTTP/1.1"]
    for name, value in headers:
        if not name or ":" in name or not (_one_line(name) and _one_line(value)):
            raise ProtocolError(f"refusing to send the header {name!r}: {value!r}")
        lines.append(f"{name}: {value}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def _one_line(text: str) -> bool:
    """No CR, LF or NUL: the text cannot end its header line (three `in` tests: a generator over
    the three characters cost a request about 4 us more)."""
    return "\r" not in text and "\n" not in text and "\0" not in text


class _AnswerReader:
    """The parser's callbacks for one answer (1xx answers before it are skipped)."""

    def __init__(self, limit: int):
        self.limit = limit
        self.reason = b""
        self.headers: list[tuple[bytes, bytes]] = []
        self.head_bytes = 0
        self.head_done = False
        self.status = 0
        self.version = ""
        self.keep_alive = False
        self.body = bytearray()
        self.truncated = False
        self.done = False  # the final (non-1xx) answer is complete
        self.extra = False  # bytes came after it: the connection is not reusable
        self.parser: httptools.HttpResponseParser | None = None

    def on_message_begin(self) -> None:
        if self.done:
            self.extra = True
            return
        self.reason, self.headers, self.head_bytes, self.head_done = b"", [], 0, False

    def on_status(self, reason: bytes) -> None:
        if not self.done:
            self.reason += reason
            self._count(len(reason))

    def on_header(self, name: bytes, value: bytes) -> None:
        if not self.done:
            self.headers.append((name, value))
            self._count(len(name) + len(value) + 4)

    def _count(self, size: int) -> None:
        self.head_bytes += size
        if self.head_bytes > MAX_HEAD_BYTES:
            raise ProtocolError(f"the answer's head is larger than {MAX_HEAD_BYTES} bytes")

    def on_headers_complete(self) -> None:
        if not self.done:
            self.head_done = True
            self.status = self.parser.get_status_code()
            self.version = self.parser.get_http_version()
            self.keep_alive = self.parser.should_keep_alive()  # (llhttp answers it until the body ends)

    def on_body(self, data: bytes) -> None:
        if self.done or self.truncated:
            return
        room = self.limit - len(self.body)
        if len(data) > room:
            self.body += data[:room]
            self.truncated = True
        else:
            self.body += data

    def on_message_complete(self) -> None:
        if self.done:
            return
        if 100 <= self.status < 200:  # informational: the answer follows
            self.head_done = False
            return
        self.done = True

    def ends_at_close(self) -> bool:
        """The body runs until the server closes the connection (no length, not chunked)."""
        names = {name.lower(): value for name, value in self.headers}
        return (self.head_done and self.status not in _NO_BODY_STATUSES and b"content-length" not in names
                and b"chunked" not in names.get(b"transfer-encoding", b"").lower())


def _protocol_error(exc: Exception) -> ProtocolError:
    if isinstance(exc.__context__, ProtocolError):  # raised by a callback (a limit)
        return exc.__context__
    if isinstance(exc, httptools.HttpParserUpgrade):
        return ProtocolError("the server switched protocols (Upgrade), which a GET never asked for")
    return ProtocolError(f"not an HTTP/1.x answer: {exc}")


class HostConnection:
    """One connection to one host (reopened when the origin changes or the server closed it).
    Its phase says what a time limit that expires cuts short: "connect" (TCP), "handshake"
    (TLS), or "exchange" (the server has the request, or is idle between requests)."""

    def __init__(self, opener: Opener, tls_context: ssl.SSLContext, stalls: LoopStalls):
        self._opener = opener
        self._tls_context = tls_context
        self._stalls = stalls
        self._key: tuple[str, str, int] | None = None  # (scheme, ip, port) of the open connection
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self.phase = "exchange"

    async def get(self, scheme: str, ip: str, port: int, host: str, target: str,
                  headers: list[tuple[str, str]], limit: int, connect_timeout_s: float) -> Answer:
        """GET target; the body is read up to `limit` bytes. Raises ConnectFailed (no
        connection: its status_class says why), OSError or ProtocolError (the exchange)."""
        request = request_bytes(target, headers)
        self.phase = "exchange"
        await self._connect(scheme, ip, port, host, connect_timeout_s)
        reader = self._reader
        answer = _AnswerReader(limit)
        parser = answer.parser = httptools.HttpResponseParser(answer)
        try:
            self._writer.write(request)
            await self._writer.drain()
            fed = 0
            while not answer.done and not answer.truncated:
                data = await reader.read(READ_CHUNK)
                if not data:  # the server closed the connection
                    if answer.ends_at_close():
                        answer.done = True
                        break
                    raise ProtocolError("the server closed the connection before the answer was complete")
                fed += len(data)
                if not answer.head_done and fed > MAX_HEAD_BYTES + READ_CHUNK:
                    raise ProtocolError(f"the answer's head is larger than {MAX_HEAD_BYTES} bytes")
                try:
                    parser.feed_data(data)
                except (httptools.HttpParserError, httptools.HttpParserUpgrade) as exc:
                    if answer.done:  # bytes after a complete answer: keep it, drop the connection
                        answer.extra = True
                        break
                    raise _protocol_error(exc) from exc
        except BaseException:
            await self.aclose()
            raise
        finally:
            # The parser calls the reader's methods and the reader holds the parser: without
            # this, each answer (its body included) waits for the cycle collector to be freed.
            answer.parser = None
        if answer.truncated or answer.extra or not answer.done or not answer.keep_alive or answer.ends_at_close():
            await self.aclose()  # an unread rest, or "Connection: close": not reusable
        return Answer("HTTP/" + answer.version, answer.status, answer.reason.decode("latin-1"),
                      [(k.decode("latin-1"), v.decode("latin-1")) for k, v in answer.headers],
                      bytes(answer.body), answer.truncated, request)

    async def _connect(self, scheme: str, ip: str, port: int, host: str, timeout_s: float) -> None:
        key = (scheme, ip, port)
        if self._writer is not None and (key != self._key or self._reader.at_eof() or self._writer.is_closing()):
            await self.aclose()  # another origin, or the server closed the idle connection
        if self._writer is not None:
            return
        try:
            self.phase = "connect"
            try:
                async with ServerTimeLimit(timeout_s, self._stalls):
                    self._reader, self._writer = await self._opener(ip, port)
            except TimeoutError:
                raise ConnectFailed(f"no connection to {host} ({ip} port {port}) within {timeout_s:g} s",
                                    StatusClass.CONNECT_TIMEOUT) from None
            except OSError as exc:
                raise ConnectFailed(str(exc) or type(exc).__name__) from exc
            if scheme == "https":
                self.phase = "handshake"
                await self._handshake(host, timeout_s)
        except BaseException:  # (the phase stays: a whole-fetch limit is named by it)
            await self.aclose()
            raise
        self.phase = "exchange"
        self._key = key

    async def _handshake(self, host: str, timeout_s: float) -> None:
        """TLS over the connection just made, its SNI and certificate check for `host`; a
        limit of its own, so a server that takes the connection and never finishes the
        handshake is told apart from one that never answers the connection."""
        try:
            async with ServerTimeLimit(timeout_s, self._stalls):
                await self._writer.start_tls(self._tls_context, server_hostname=host)
        except TimeoutError:
            raise ConnectFailed(f"TLS: no handshake with {host} within {timeout_s:g} s",
                                StatusClass.TLS_HANDSHAKE_TIMEOUT) from None
        except (ssl.SSLError, OSError) as exc:  # (ssl.SSLError is an OSError: said for the reader)
            status_class, message = tls_failure(exc, host)
            raise ConnectFailed(message, status_class) from exc

    async def aclose(self) -> None:
        writer, self._writer, self._reader = self._writer, None, None
        if writer is not None:
            writer.close()


class ConnectionFactory:
    def __init__(self, opener: Opener = open_tcp, tls_context: ssl.SSLContext | None = None):
        """opener: how a connection is opened (tests pass one that returns canned streams).
        tls_context: the batch's (tls.client_context); built here when not given, before any
        request, so loading the CA bundle never stalls the event loop."""
        self._opener = opener
        self.tls_context = tls_context or client_context()
        self.stalls: LoopStalls = NO_STALLS  # the engine's (HttpExchanger sets it)

    def new_connection(self) -> HostConnection:
        return HostConnection(self._opener, self.tls_context, self.stalls)
