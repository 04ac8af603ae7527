"""The asyncio HTTP/1.1 server that serves a DemoWeb on 127.0.0.1, all hosts on one port.

Requests are dispatched on the Host header; the page model (web.py's DemoWeb) does the
rest, so this module only parses requests, keeps connections alive, writes responses and
logs them.
It binds to loopback only (anything else is a ValueError): the demo web must never be
reachable from, or talk to, the outside.

Port ownership: the server owns the port. URLs inside pages carry the port, so once bound
the server re-binds its web with `web.with_port(actual_port)`; `server.web` is always the
model actually served, and `port=0` (pick a free port) just works.

DemoWebThread runs a server on its own event loop in a background thread, for tests and
in-process demos whose crawler runs its own loop in the main thread.

Streaming responses (Response.stream / bytes_per_s / hang, used by the hostile hosts) are
written chunk by chunk with backpressure while a watcher reads the socket, so a client that
goes away ends them at once; they never block other connections, always close the
connection afterwards, and stop() cancels them instead of waiting. Their access-log row is
written when they end: `end` is when the server stopped writing or the client went away,
`bytes_sent` the body bytes actually written, and status 0 means nothing was answered (hang).
"""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from email.utils import formatdate
from http import HTTPStatus
from urllib.parse import urlsplit

from .access_log import AccessLog
from .host_protocol import normalize_host
from .responses import Response, error_response
from .web import DemoWeb

BIND_ADDRESS = "127.0.0.1"
MAX_BODY_BYTES = 1 << 20  # request bodies are read and dropped; larger ones close the link
_REASONS = {s.value: s.phrase for s in HTTPStatus}
_NO_BODY_STATUSES = (204, 304)


class _Connection:
    __slots__ = ("task", "busy")

    def __init__(self, task: asyncio.Task | None):
        self.task = task
        # Mid-request: stop() lets it finish instead of cancelling. Streaming (hostile)
        # responses clear it again: they may never finish.
        self.busy = False


class _BadRequest(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


class DemoWebServer:
    def __init__(
        self,
        web: DemoWeb | None = None,
        *,
        host: str = BIND_ADDRESS,
        port: int | None = None,
        access_log: AccessLog | None = None,
        idle_timeout: float = 30.0,
        max_header_bytes: int = 16 * 1024,
    ):
        """port=None serves on web.port; port=0 picks a free port."""
        if host != BIND_ADDRESS:
            raise ValueError(f"demoweb only binds to {BIND_ADDRESS}, not {host!r}")
        self._web = web if web is not None else DemoWeb()
        self._requested_port = self._web.port if port is None else port
        self.access_log = access_log if access_log is not None else AccessLog()
        self.idle_timeout = idle_timeout
        self.max_header_bytes = max_header_bytes
        self._server: asyncio.Server | None = None
        self._bound = False
        self._connections: set[_Connection] = set()
        self._conn_ids = itertools.count(1)
        self._stopping = False
        self._date_second = -1
        self._date_value = ""

    # ---- lifecycle --------------------------------------------------------------------

    @property
    def web(self) -> DemoWeb:
        return self._web

    @property
    def port(self) -> int:
        if not self._bound:
            raise RuntimeError("server not started")
        return self._web.port

    def set_day(self, day: int) -> None:
        """Serve the web as of another day from the next request on (no restart needed)."""
        self._web = self._web.with_day(day)

    async def start(self) -> "DemoWebServer":
        self._stopping = False
        self._server = await asyncio.start_server(
            self._handle_connection, host=BIND_ADDRESS, port=self._requested_port,
            limit=self.max_header_bytes, backlog=1024,
        )
        bound_port = self._server.sockets[0].getsockname()[1]
        # A fresh state too: the 429-once / flapping-503 hosts count per server run.
        self._web = self._web.with_port(bound_port).with_fresh_state()
        self._bound = True
        return self

    async def stop(self, grace: float = 2.0) -> None:
        """Stop listening, drop idle connections, give in-flight requests `grace` seconds."""
        if self._server is None:
            return
        self._stopping = True
        # Stop accepting first, then let connections accepted in the last loop iteration
        # attach to the server: on Python 3.11, one whose transport is created after
        # Server.close() fails an assertion and its socket leaks open (the client hangs).
        loop = asyncio.get_running_loop()
        for sock in self._server.sockets:
            try:
                loop.remove_reader(sock.fileno())
            except (NotImplementedError, ValueError, OSError):
                pass
        await _spin_loop(5)
        self._server.close()
        # Those connections take a few more iterations to reach their handler, which sees
        # _stopping and closes the socket.
        await _spin_loop(20)
        for conn in list(self._connections):
            if not conn.busy and conn.task is not None:
                conn.task.cancel()
        pending = [c.task for c in self._connections if c.task is not None]
        if pending:
            await asyncio.wait(pending, timeout=grace)
        for conn in list(self._connections):
            if conn.task is not None:
                conn.task.cancel()
        pending = [c.task for c in self._connections if c.task is not None]
        if pending:
            await asyncio.wait(pending, timeout=1.0)
        await self._server.wait_closed()
        await _spin_loop(5)  # let the transports' close callbacks run
        self._server = None

    async def __aenter__(self) -> "DemoWebServer":
        return await self.start()

    async def __aexit__(self, *exc) -> None:
        await self.stop()

    # ---- connections ------------------------------------------------------------------

    async def _handle_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = _Connection(asyncio.current_task())
        self._connections.add(conn)
        try:
            await self._serve_connection(reader, writer, conn, next(self._conn_ids))
        except (OSError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass  # client went away or stalled mid-body, or stop() dropped the connection
        finally:
            self._connections.discard(conn)
            writer.close()

    async def _serve_connection(self, reader, writer, conn: _Connection, conn_id: int) -> None:
        while not self._stopping:
            try:
                async with asyncio.timeout(self.idle_timeout):
                    head = await reader.readuntil(b"\r\n\r\n")
            except TimeoutError:
                return
            except asyncio.IncompleteReadError:
                return  # EOF between requests (or mid-head): nothing to answer
            except asyncio.LimitOverrunError:
                await self._send_error(writer, conn_id, time.time(), 431,
                                       "Request Header Fields Too Large")
                return
            start = time.time()
            conn.busy = True
            try:
                keep_alive = await self._serve_request(head, reader, writer, conn, conn_id, start)
            finally:
                conn.busy = False
            if not keep_alive:
                return

    async def _serve_request(self, head: bytes, reader, writer, conn: _Connection, conn_id: int,
                             start: float) -> bool:
        """Answer one request; True if the connection stays open for the next one."""
        try:
            method, target, version, headers = _parse_head(head)
        except _BadRequest as exc:
            await self._send_error(writer, conn_id, start, exc.status, exc.message)
            return False

        # Bodies are never used, but must be consumed to find the next request.
        if "transfer-encoding" in headers:
            await self._send_error(writer, conn_id, start, 501, "Not Implemented", method=method)
            return False
        length_text = headers.get("content-length")
        if length_text:
            if not length_text.isdigit():
                await self._send_error(writer, conn_id, start, 400, "Bad Request", method=method)
                return False
            length = int(length_text)
            if length > MAX_BODY_BYTES:
                await self._send_error(writer, conn_id, start, 413, "Content Too Large", method=method)
                return False
            if length:
                async with asyncio.timeout(self.idle_timeout):
                    await reader.readexactly(length)

        tokens = {t.strip().lower() for t in headers.get("connection", "").split(",")}
        if version == "HTTP/1.1":
            keep_alive = "close" not in tokens
        else:
            keep_alive = "keep-alive" in tokens
        if self._stopping:
            keep_alive = False

        if target.startswith("/"):
            path = target
            host_header = headers.get("host")
        else:  # absolute-form, as sent to proxies
            parts = urlsplit(target)
            path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
            host_header = parts.netloc
        if host_header is None and version == "HTTP/1.1":
            await self._send_error(writer, conn_id, start, 400, "Bad Request", method=method)
            return False
        host = normalize_host(host_header or "")

        if method not in ("GET", "HEAD"):
            response = error_response(405, "Method Not Allowed", [("Allow", "GET, HEAD")])
        else:
            try:
                response = self._web.respond(host, path, headers)
            except Exception:  # a bug in the model must not kill the connection loop silently
                response = error_response(500, "Internal Server Error")
                keep_alive = False
        if response.delay_s:
            await asyncio.sleep(response.delay_s)  # a slow server: the log's end - start shows it
        if response.streaming:
            conn.busy = False  # may never end: stop() cancels it rather than waiting
            await self._serve_streaming(reader, writer, response, version, method, host, path,
                                        headers, conn_id, start)
            return False
        answered = await self._write(writer, response, keep_alive, version, head_only=method == "HEAD")
        self.access_log.record(host, path, method, start, answered + response.logged_late_s, response.status,
                               0 if method == "HEAD" else len(response.body),
                               "if-none-match" in headers or "if-modified-since" in headers,
                               conn_id)
        return keep_alive

    async def _send_error(self, writer, conn_id: int, start: float, status: int, message: str,
                          method: str = "") -> None:
        response = error_response(status, message)
        try:
            await self._write(writer, response, False, "HTTP/1.1", head_only=method == "HEAD")
        finally:
            self.access_log.record("", "", method, start, time.time(), status,
                                   len(response.body), False, conn_id)

    async def _write(self, writer, response: Response, keep_alive: bool, version: str,
                     head_only: bool) -> float:
        """Send the answer; returns the time just before it was handed to the socket. The
        client cannot have it earlier, whereas a time taken after drain() can be late by a
        whole scheduler slice on a loaded machine (the client already has the answer)."""
        data = self._head(response, keep_alive, version, chunked=False)
        if not head_only and response.status not in _NO_BODY_STATUSES:
            data += response.body
        answered = time.time()
        writer.write(data)
        await writer.drain()
        return answered

    def _head(self, response: Response, keep_alive: bool, version: str, chunked: bool) -> bytes:
        """Status line and headers. Adds Content-Length (unless present, chunked or streamed)."""
        lines = [f"HTTP/1.1 {response.status} {_REASONS.get(response.status, 'Unknown')}\r\n"]
        has_length = False
        for name, value in response.headers:
            lines.append(f"{name}: {value}\r\n")
            has_length = has_length or name.lower() == "content-length"
        if chunked:
            lines.append("Transfer-Encoding: chunked\r\n")
        elif (not has_length and response.stream is None
              and response.status not in _NO_BODY_STATUSES):
            lines.append(f"Content-Length: {len(response.body)}\r\n")
        lines.append(f"Date: {self._http_date()}\r\nServer: demoweb\r\n")
        if not keep_alive:
            lines.append("Connection: close\r\n")
        elif version == "HTTP/1.0":
            lines.append("Connection: keep-alive\r\n")
        lines.append("\r\n")
        return "".join(lines).encode("latin-1")

    # ---- streaming (hostile) responses -------------------------------------------------

    async def _serve_streaming(self, reader, writer, response: Response, version: str, method: str,
                               host: str, path: str, headers: dict[str, str], conn_id: int,
                               start: float) -> None:
        """Hang, drip or stream `response` until done, the client goes away or stop()."""
        sent = [0]  # body bytes handed to the transport, readable after a cancellation
        status = 0  # stays 0 when nothing is answered (hang)
        finished = False
        watcher = asyncio.ensure_future(_read_until_eof(reader))
        try:
            if response.hang:
                await watcher
            else:
                status = response.status
                pump = asyncio.ensure_future(
                    self._pump(writer, response, version, method == "HEAD", sent))
                try:
                    await asyncio.wait({pump, watcher}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    pump.cancel()  # no-op once done
                finished = (pump.done() and not pump.cancelled() and pump.exception() is None)
        finally:
            watcher.cancel()
            if not finished:
                # Drop whatever is still buffered: close() would wait for a client that
                # may never read it.
                writer.transport.abort()
            self.access_log.record(host, path, method, start, time.time(), status, sent[0],
                                   "if-none-match" in headers or "if-modified-since" in headers,
                                   conn_id)

    async def _pump(self, writer, response: Response, version: str, head_only: bool,
                    sent: list[int]) -> None:
        chunked = (response.stream is not None and version == "HTTP/1.1"
                   and response.header("Content-Length") is None)
        writer.write(self._head(response, False, version, chunked))
        await writer.drain()
        if head_only or response.status in _NO_BODY_STATUSES:
            return
        chunks = response.stream if response.stream is not None else (response.body,)
        rate = response.bytes_per_s
        for chunk in chunks:
            if not chunk:
                continue
            if rate is None:
                writer.write(b"%x\r\n%b\r\n" % (len(chunk), chunk) if chunked else chunk)
                sent[0] += len(chunk)
                await writer.drain()  # waits while the client is not reading
                await asyncio.sleep(0)  # a fast reader must not starve other connections
                continue
            step = max(1, int(rate / 10))  # ~10 writes a second, at least a byte each
            for i in range(0, len(chunk), step):
                piece = chunk[i:i + step]
                writer.write(b"%x\r\n%b\r\n" % (len(piece), piece) if chunked else piece)
                sent[0] += len(piece)
                await writer.drain()
                await asyncio.sleep(len(piece) / rate)
        if chunked:
            writer.write(b"0\r\n\r\n")
            await writer.drain()

    def _http_date(self) -> str:
        # formatdate is slow-ish; the Date header only changes once a second.
        now = int(time.time())
        if now != self._date_second:
            self._date_second = now
            self._date_value = formatdate(now, usegmt=True)
        return self._date_value


async def _read_until_eof(reader: asyncio.StreamReader) -> None:
    """Read and drop input until the client closes (or resets) the connection."""
    try:
        while await reader.read(65536):
            pass
    except (OSError, asyncio.IncompleteReadError):
        pass


async def _spin_loop(iterations: int) -> None:
    for _ in range(iterations):
        await asyncio.sleep(0)


def _parse_head(head: bytes) -> tuple[str, str, str, dict[str, str]]:
    """Request line and headers (lowercase names, repeats joined with ', ')."""
    lines = head.decode("latin-1").split("\r\n")
    while lines and lines[0] == "":
        lines.pop(0)  # RFC 9112 §2.2: ignore empty lines before the request line
    if not lines:
        raise _BadRequest(400, "Bad Request")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[0].isalpha() or not parts[1]:
        raise _BadRequest(400, "Bad Request")
    method, target, version = parts
    if version not in ("HTTP/1.1", "HTTP/1.0"):
        status = 505 if version.startswith("HTTP/") else 400
        raise _BadRequest(status, "HTTP Version Not Supported" if status == 505 else "Bad Request")
    if not (target.startswith("/") or target.startswith("http://") or target.startswith("https://")):
        raise _BadRequest(400, "Bad Request")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if not line:
            continue
        name, sep, value = line.partition(":")
        if not sep or not name or name != name.strip() or " " in name:
            raise _BadRequest(400, "Bad Request")  # also rejects obsolete line folding
        name = name.lower()
        value = value.strip()
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    return method, target, version, headers


class DemoWebThread:
    """A DemoWebServer on its own event loop in a daemon thread.

    with DemoWebThread(DemoWeb(hosts=10), port=0) as demo:
        demo.base_url(3)  # 'http://h0003.demo.test:<port>'
    """

    def __init__(self, web: DemoWeb | None = None, *, port: int | None = None,
                 access_log: AccessLog | None = None, idle_timeout: float = 30.0):
        self.server = DemoWebServer(web, port=port, access_log=access_log,
                                    idle_timeout=idle_timeout)
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop_event: asyncio.Event | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None

    @property
    def port(self) -> int:
        return self.server.port

    @property
    def web(self) -> DemoWeb:
        return self.server.web

    @property
    def access_log(self) -> AccessLog:
        return self.server.access_log

    def base_url(self, host_index: int) -> str:
        return self.server.web.base_url(host_index)

    def set_day(self, day: int) -> None:
        self.server.set_day(day)  # a single attribute swap, safe across threads

    def start(self, timeout: float = 10.0) -> "DemoWebThread":
        """Blocks until the server listens (or raises what stopped it, e.g. port in use)."""
        if self._thread is not None:
            raise RuntimeError("already started")
        self._thread = threading.Thread(target=self._run, name="demoweb-server", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout):
            raise RuntimeError("demoweb server did not start in time")
        if self._error is not None:
            self._thread.join()
            raise self._error
        return self

    def stop(self, timeout: float = 10.0) -> None:
        thread, loop, event = self._thread, self._loop, self._stop_event
        if thread is None:
            return
        if loop is not None and event is not None and thread.is_alive():
            try:
                loop.call_soon_threadsafe(event.set)
            except RuntimeError:
                pass  # loop already closed
        thread.join(timeout)
        self._thread = None

    def __enter__(self) -> "DemoWebThread":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def _run(self) -> None:
        asyncio.run(self._main())

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop_event = asyncio.Event()
        try:
            await self.server.start()
        except BaseException as exc:  # reported to start()'s caller
            self._error = exc
            self._ready.set()
            return
        self._ready.set()
        try:
            await self._stop_event.wait()
        finally:
            await self.server.stop()
