"""HTTP connections for the fetch engine: one keep-alive HTTP/1.1 connection per host being
fetched, kept in the host's VisitState, the protocol spoken by h11.

Not httpx, nor httpcore's pool: the engine sends one request at a time per host and needs
no cookies, auth, redirects, proxies or pooling, and those layers cost more CPU per page
than parsing the answer does. h11 still does all the HTTP/1.1 parsing and framing
(Content-Length, chunked, close-delimited bodies, header size limits), so a hostile server
meets the same well-tested parser. The engine closes a host's connection as soon as the
host has nothing queued, so idle hosts hold nothing.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import h11

MAX_HEAD_BYTES = 100 * 1024  # status line and headers (as httpcore allows)
READ_CHUNK = 64 * 1024

# opener(ip, port, ssl_context, server_hostname) -> (reader, writer); tests pass canned streams.
Opener = Callable[[str, int, ssl.SSLContext | None, str | None],
                  Awaitable[tuple[asyncio.StreamReader, asyncio.StreamWriter]]]


class ConnectFailed(OSError):
    """The connection could not be made (refused, reset, TLS handshake failed)."""


@dataclass(frozen=True)
class Answer:
    """An HTTP answer as received: header names keep their case, the body its encoding."""

    http_version: str
    status: int
    reason: str
    headers: list[tuple[str, str]]
    body: bytes
    truncated: bool  # the body passed the limit and was cut there


async def open_tcp(ip: str, port: int, ssl_context: ssl.SSLContext | None,
                   server_hostname: str | None) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection(ip, port, ssl=ssl_context, limit=READ_CHUNK,
                                         server_hostname=server_hostname if ssl_context else None)


class HostConnection:
    """One connection to one host (reopened when the origin changes or the server closed it)."""

    def __init__(self, opener: Opener, ssl_context: Callable[[], ssl.SSLContext]):
        self._opener = opener
        self._ssl_context = ssl_context
        self._key: tuple[str, str, int] | None = None  # (scheme, ip, port) of the open connection
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._h11: h11.Connection | None = None

    async def get(self, scheme: str, ip: str, port: int, host: str, target: str,
                  headers: list[tuple[str, str]], limit: int, connect_timeout_s: float) -> Answer:
        """GET target; the body is read up to `limit` bytes. Raises TimeoutError (connect),
        ConnectFailed, OSError or h11.ProtocolError (the exchange)."""
        await self._connect(scheme, ip, port, host, connect_timeout_s)
        conn, reader = self._h11, self._reader
        try:
            self._writer.write(conn.send(h11.Request(method="GET", target=target, headers=headers))
                               + conn.send(h11.EndOfMessage()))
            await self._writer.drain()
            response = await self._next(conn, reader, (h11.Response, h11.InformationalResponse))
            while isinstance(response, h11.InformationalResponse):  # 1xx: the answer follows
                response = await self._next(conn, reader, (h11.Response, h11.InformationalResponse))
            body = bytearray()
            truncated = False
            while True:
                event = await self._next(conn, reader, (h11.Data, h11.EndOfMessage))
                if isinstance(event, h11.EndOfMessage):
                    break
                body += event.data
                if len(body) > limit:
                    truncated = True
                    del body[limit:]
                    break
        except BaseException:
            await self.aclose()
            raise
        if truncated or conn.our_state is not h11.DONE or conn.their_state is not h11.DONE:
            await self.aclose()  # an unread rest, or "Connection: close": not reusable
        else:
            conn.start_next_cycle()
        return Answer("HTTP/" + response.http_version.decode("ascii"), response.status_code,
                      response.reason.decode("latin-1"),
                      [(k.decode("latin-1"), v.decode("latin-1")) for k, v in response.headers.raw_items()],
                      bytes(body), truncated)

    @staticmethod
    async def _next(conn: h11.Connection, reader: asyncio.StreamReader, wanted: tuple[type, ...]):
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(await reader.read(READ_CHUNK))  # b"" tells h11 the peer closed
                continue
            if isinstance(event, wanted):
                return event
            raise h11.RemoteProtocolError(f"unexpected {type(event).__name__} from the server")

    async def _connect(self, scheme: str, ip: str, port: int, host: str, timeout_s: float) -> None:
        key = (scheme, ip, port)
        if self._writer is not None and (key != self._key or self._reader.at_eof() or self._writer.is_closing()):
            await self.aclose()  # another origin, or the server closed the idle connection
        if self._writer is not None:
            return
        context = self._ssl_context() if scheme == "https" else None
        try:
            async with asyncio.timeout(timeout_s):
                self._reader, self._writer = await self._opener(ip, port, context, host)
        except TimeoutError:
            raise
        except (OSError, ssl.SSLError) as exc:
            raise ConnectFailed(str(exc) or type(exc).__name__) from exc
        self._key = key
        self._h11 = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_HEAD_BYTES)

    async def aclose(self) -> None:
        writer, self._writer, self._reader, self._h11 = self._writer, None, None, None
        if writer is not None:
            writer.close()


class ConnectionFactory:
    def __init__(self, opener: Opener = open_tcp):
        """opener: how a connection is opened (tests pass one that returns canned streams)."""
        self._opener = opener
        self._ssl: ssl.SSLContext | None = None

    def _ssl_context(self) -> ssl.SSLContext:
        if self._ssl is None:  # built on the first https host: loading the CA bundle costs ms
            import certifi

            self._ssl = ssl.create_default_context(cafile=certifi.where())
        return self._ssl

    def new_connection(self) -> HostConnection:
        return HostConnection(self._opener, self._ssl_context)
