"""A web of HTTPS hosts on loopback, made by the tests: a private CA generated at test time
(trustme) signs each host's certificate, and one server picks the certificate by the SNI the
client sends, as a shared host does. Every host listens on the default ports (80, 443) of
loopback addresses drawn at random in 127.0.0.0/8 (we are root, as CI is), so URLs carry no
port, like the real web's; the crawler reaches them by name through its resolver overrides.

Hosts (HOSTS names them):
  valid        a good certificate; its home links every other host, protocol-relative and
               http:// links among them, a zstd page, and a page never answered (NEVER)
  expired      a certificate of the CA that expired yesterday
  wrong-name   a certificate of the CA for another name
  untrusted    a certificate of a second CA nobody trusts
  hang         takes the TCP connection, never answers the ClientHello
  plain        plain HTTP on port 443
  no-accept    a listening socket whose backlog is full: a connection is never made
  moved        every http URL answers 301 with its https twin
  hsts         https with Strict-Transport-Security; its http URLs answer 200 (no redirect)
The server records each request's bytes as received, the SNI of each TLS connection, and an
access log (host, scheme, path, status, connection).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import ipaddress
import random
import socket
import ssl
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import trustme
import zstandard

from crawl_assets.crawler.url_policy.addresses import NetworkException

DOMAIN = "tls.test"
HOSTS = ("valid", "expired", "wrong-name", "untrusted", "hang", "plain", "no-accept", "moved", "hsts")
HSTS_HEADER = "max-age=31536000"


def name(host: str) -> str:
    return f"{host}.{DOMAIN}"


def page(title: str, links: list[str]) -> bytes:
    anchors = "".join(f'<li><a href="{href}">{href}</a></li>' for href in links)
    return (f"<!doctype html><html><head><title>{title}</title></head><body><h1>{title}</h1>"
            f"<p>A page of the TLS test web, {title}.</p><ul>{anchors}</ul></body></html>").encode()


def valid_home() -> bytes:
    return page("valid home", [
        "/a.html", "//valid.tls.test/b.html",  # protocol-relative: https, like the page
        "/zstd.html", "/never.html",
        "https://expired.tls.test/", "https://wrong-name.tls.test/", "https://untrusted.tls.test/",
        "https://hang.tls.test/", "https://plain.tls.test/", "https://no-accept.tls.test/",
        # moved: its http URL first (301 to https), its https twin, then http links to more pages
        "http://moved.tls.test/x.html", "https://moved.tls.test/x.html",
        "https://hsts.tls.test/", "http://hsts.tls.test/h2.html",
    ])


@dataclass
class Site:
    """What a host serves: path -> (status, headers, body); `scheme` answers per scheme."""

    https: dict[str, tuple[int, list[tuple[str, str]], bytes]] = field(default_factory=dict)
    http: dict[str, tuple[int, list[tuple[str, str]], bytes]] = field(default_factory=dict)
    moved: bool = False  # every http URL: 301 to https
    hsts: bool = False


NEVER = (0, [], b"")  # the request is taken and never answered
ROBOTS = (200, [("Content-Type", "text/plain")], b"User-agent: *\nAllow: /\n")


def html(body: bytes, *extra: tuple[str, str]) -> tuple[int, list[tuple[str, str]], bytes]:
    return 200, [("Content-Type", "text/html; charset=utf-8"), *extra], body


def sites() -> dict[str, Site]:
    zstd_page = zstandard.ZstdCompressor().compress(page("zstd", ["/from-zstd.html"]))
    valid = Site(https={"/robots.txt": ROBOTS, "/": html(valid_home()), "/a.html": html(page("a", ["/b.html"])),
                        "/b.html": html(page("b", ["http://moved.tls.test/y.html", "//moved.tls.test/z.html"])),
                        "/zstd.html": (200, [("Content-Type", "text/html"), ("Content-Encoding", "zstd")], zstd_page),
                        "/from-zstd.html": html(page("found in a zstd page", [])), "/never.html": NEVER})
    moved_pages = {"/robots.txt": ROBOTS, **{f"/{p}.html": html(page(f"moved {p}", [])) for p in "xyz"}}
    hsts_pages = {"/robots.txt": ROBOTS, "/": html(page("hsts home", ["http://hsts.tls.test/h1.html"])),
                  "/h1.html": html(page("h1", [])), "/h2.html": html(page("h2", []))}
    plain_copy = {path: answer for path, answer in hsts_pages.items()}
    return {
        "valid": valid,
        "moved": Site(https=moved_pages, moved=True),
        "hsts": Site(https=hsts_pages, http=plain_copy, hsts=True),
        # Served if a client got through (it must not: each has a certificate it must refuse).
        **{h: Site(https={"/robots.txt": ROBOTS, "/": html(page(h, []))}) for h in ("expired", "wrong-name", "untrusted")},
        "plain": Site(http={"/robots.txt": ROBOTS, "/": html(page("plain", []))}),
    }


@dataclass(frozen=True)
class Hit:
    host: str
    scheme: str
    path: str
    status: int
    connection: int
    sni: str | None
    alpn: str | None  # the protocol the TLS handshake settled on (the server offers h2 first)


class TlsWeb:
    """`with TlsWeb(folder) as web:` serves the hosts; web.settings_overrides() are what a
    crawl of it needs (resolver overrides, the loopback exception, the CA as ca_bundle)."""

    def __init__(self, folder: Path, before_answer: Callable[[str, str], None] | None = None):
        """before_answer(host, path): called in the server's thread before each answer."""
        self.folder = Path(folder)
        self.before_answer = before_answer
        self.ca, self.other_ca = trustme.CA(), trustme.CA()
        self.ca_file = self.folder / "test-ca.pem"
        self.ca.cert_pem.write_to_path(str(self.ca_file))
        rng = random.Random()
        base = f"127.{rng.randrange(1, 255)}.{rng.randrange(1, 255)}"
        self.address = {h: f"{base}.{i + 1}" for i, h in enumerate(("web", "hang", "plain", "no-accept"))}
        self.sites = sites()
        self.hits: list[Hit] = []
        self.received: list[tuple[str, bytes]] = []  # (host, the request's bytes as received)
        self.sni: list[str | None] = []  # the SNI of every TLS handshake begun
        self._sni_of: dict[int, str | None] = {}  # id(SSLObject) -> its SNI
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._sockets: list[socket.socket] = []
        self._connections = 0
        self._failure: BaseException | None = None

    # -- what a crawl of it needs ------------------------------------------------------

    def ip_of(self, host: str) -> str:
        return self.address.get(host, self.address["web"])

    def resolver_overrides(self) -> dict[str, str]:
        return {name(h): self.ip_of(h) for h in HOSTS}

    def settings_overrides(self, trust: bool = True) -> dict:
        overrides = dict(resolver_overrides=self.resolver_overrides(), host_scope=(f"*.{DOMAIN}",),
                         network_exceptions=(NetworkException((f"*.{DOMAIN}",),
                                                              (ipaddress.ip_network("127.0.0.0/8"),)),))
        if trust:
            overrides["ca_bundle"] = self.ca_file
        return overrides

    def hits_of(self, host: str) -> list[Hit]:
        return [hit for hit in self.hits if hit.host == name(host)]

    # -- certificates ------------------------------------------------------------------

    def _contexts(self) -> dict[str, ssl.SSLContext]:
        yesterday = dt.datetime.now(dt.timezone.utc) - dt.timedelta(days=1)
        issued = {
            "valid": self.ca.issue_cert(name("valid")),
            "expired": self.ca.issue_cert(name("expired"), not_before=yesterday - dt.timedelta(days=30),
                                          not_after=yesterday),
            "wrong-name": self.ca.issue_cert("someone-else.tls.test"),
            "untrusted": self.other_ca.issue_cert(name("untrusted")),
            "moved": self.ca.issue_cert(name("moved")),
            "hsts": self.ca.issue_cert(name("hsts")),
        }
        contexts = {}
        for host, cert in issued.items():
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            cert.configure_cert(context)
            context.set_alpn_protocols(["h2", "http/1.1"])  # as most servers do: HTTP/2 if the client offers it
            contexts[name(host)] = context
        return contexts

    def _server_context(self) -> ssl.SSLContext:
        by_name = self._contexts()
        default = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.ca.issue_cert("no-sni.tls.test").configure_cert(default)  # what a client without SNI gets
        default.set_alpn_protocols(["h2", "http/1.1"])

        def choose(ssl_object, server_name, _context):
            with self._lock:
                self.sni.append(server_name)
                self._sni_of[id(ssl_object)] = server_name
            if server_name in by_name:
                ssl_object.context = by_name[server_name]

        default.sni_callback = choose
        return default

    # -- serving -----------------------------------------------------------------------

    def __enter__(self) -> "TlsWeb":
        self._thread = threading.Thread(target=self._run, name="tls-web", daemon=True)
        self._thread.start()
        if not self._ready.wait(15) or self._failure is not None:
            raise RuntimeError(f"the TLS test web did not start: {self._failure!r}")
        return self

    def __exit__(self, *exc) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(15)
        for sock in self._sockets:
            sock.close()

    def _run(self) -> None:
        asyncio.run(self._main())

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        try:
            web, tls = self.address["web"], self._server_context()
            servers = [
                await asyncio.start_server(self._serve("https"), web, 443, ssl=tls),
                await asyncio.start_server(self._serve("http"), web, 80),
                await asyncio.start_server(self._hang, self.address["hang"], 443),
                await asyncio.start_server(self._serve("http"), self.address["plain"], 443),
            ]
            self._sockets += full_backlog(self.address["no-accept"], 443)
        except BaseException as exc:  # (PermissionError when not root: ports 80 and 443)
            self._failure = exc
            self._ready.set()
            return
        self._ready.set()
        await self._stop.wait()
        for server in servers:
            server.close()
        handlers = asyncio.all_tasks() - {asyncio.current_task()}
        for task in handlers:
            task.cancel()
        await asyncio.gather(*handlers, return_exceptions=True)

    async def _hang(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while await reader.read(4096):  # reads the ClientHello and says nothing
                pass
        finally:
            writer.close()

    def _serve(self, scheme: str):
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            with self._lock:
                self._connections += 1
                connection = self._connections
            ssl_object = writer.get_extra_info("ssl_object")
            sni = self._sni_of.get(id(ssl_object)) if ssl_object else None
            alpn = ssl_object.selected_alpn_protocol() if ssl_object else None
            try:
                first = await reader.readexactly(1) if scheme == "http" else b""
                if first == b"\x16":  # a TLS ClientHello: answered as an HTTP server answers bytes that are no request
                    writer.write(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                    return
                while True:
                    head = first + await reader.readuntil(b"\r\n\r\n")
                    first = b""
                    if not await self._answer(scheme, head, writer, connection, sni, alpn):
                        break
            except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
                pass
            finally:
                writer.close()
        return handle

    async def _answer(self, scheme: str, head: bytes, writer: asyncio.StreamWriter, connection: int,
                      sni: str | None, alpn: str | None) -> bool:
        lines = head.decode("latin-1").split("\r\n")
        method, target, _version = lines[0].split(" ", 2)
        headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
        host = headers.get("host", "").split(":")[0]
        short = host.removesuffix("." + DOMAIN)
        site = self.sites.get(short)
        with self._lock:
            self.received.append((host, head))
        if self.before_answer is not None:
            await asyncio.to_thread(self.before_answer, host, target)
        status, extra, body = 404, [("Content-Type", "text/plain")], b"not here"
        if site is not None and scheme == "http" and site.moved:
            status, extra, body = 301, [("Location", f"https://{host}{target}")], b""
        elif site is not None:
            pages = site.https if scheme == "https" else site.http
            status, extra, body = pages.get(target, (status, extra, body))
            if scheme == "https" and site.hsts:
                extra = [*extra, ("Strict-Transport-Security", HSTS_HEADER)]
        with self._lock:
            self.hits.append(Hit(host, scheme, target, status, connection, sni, alpn))
        if status == 0:
            await asyncio.sleep(3600)  # (cancelled when the client goes or the web stops)
        reason = {200: "OK", 301: "Moved Permanently", 404: "Not Found"}[status]
        out = [f"HTTP/1.1 {status} {reason}", *(f"{k}: {v}" for k, v in extra), f"Content-Length: {len(body)}", "", ""]
        writer.write("\r\n".join(out).encode("latin-1") + body)
        await writer.drain()
        return method == "GET"


def full_backlog(address: str, port: int) -> list[socket.socket]:
    """A listening socket that never accepts, its one-place backlog taken by a connection of
    its own: Linux then drops further SYNs, so a client's connect waits until it gives up."""
    listener = socket.create_server((address, port), backlog=0)
    return [listener, socket.create_connection((address, port), timeout=5)]
