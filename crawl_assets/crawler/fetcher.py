"""The fetch loop of one batch: every URL of the batch's hosts, one request in flight per host.

Invariant: each host has one HostQueue, and at most one worker serves a HostQueue at a time
(`active`); the worker sleeps until the host's `next_allowed` time before every request and
moves it to `end of request + delay` after. So two requests to one host never overlap and
never come closer than the delay, whatever the rest of the batch does. A global semaphore
bounds how many hosts are fetched at once; a sleeping worker holds no slot.

Same-shard links found on a page join the running batch (bounded by depth and the per-host
page budget); other links are returned and wait for the next frontier snapshot.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from urllib.parse import urlsplit

import httpx

from .addresses import address_allowed
from .decoding import DecodingError, decode_body
from .links import extract_links
from .resolver import DnsError, Resolver
from .settings import CrawlSettings
from .urls import DEFAULT_PORTS, UrlError, host_of, normalize_url
from .warc import Exchange, WarcFileWriter

HTML_TYPES = ("text/html", "application/xhtml+xml")


@dataclass(frozen=True)
class FetchTask:
    url: str
    depth: int = 0


@dataclass
class FetchRecord:
    """One row of the fetch log."""

    url: str
    host: str
    depth: int
    status_class: str  # ok, redirect, http_4xx, http_5xx, timeout, too_large, dns_error, ...
    fetched_at: datetime
    status: int | None = None
    duration_ms: float = 0.0
    bytes: int = 0
    content_type: str | None = None
    sha256: str | None = None
    etag: str | None = None
    last_modified: str | None = None
    error: str | None = None
    ip: str | None = None
    warc_file: str | None = None
    warc_offset: int | None = None
    warc_length: int | None = None
    outlinks: int = 0


@dataclass
class BatchOutput:
    records: list[FetchRecord] = field(default_factory=list)
    # (source, normalised target, target host, target depth)
    links: list[tuple[str, str, str, int]] = field(default_factory=list)


def status_class_of(status: int) -> str:
    if status == 304:
        return "not_modified"
    if 200 <= status < 300:
        return "ok"
    if 300 <= status < 400:
        return "redirect"
    if 400 <= status < 500:
        return "http_4xx"
    if 500 <= status < 600:
        return "http_5xx"
    return "http_other"


@dataclass
class HostQueue:
    host: str
    pending: deque[FetchTask] = field(default_factory=deque)
    admitted: int = 0  # tasks ever queued this batch, against the per-host budget
    next_allowed: float = 0.0  # time.monotonic() before which no request may start
    active: bool = False  # a worker is serving this queue


class BatchFetcher:
    def __init__(self, settings: CrawlSettings, warc: WarcFileWriter,
                 follows_links_to: Callable[[str], bool]):
        """follows_links_to(host): may links to this host be fetched in this batch?"""
        self.settings = settings
        self.warc = warc
        self.follows_links_to = follows_links_to
        self.resolver = Resolver(settings.resolver_overrides, timeout_s=settings.connect_timeout_s)
        self.output = BatchOutput()
        self._queues: dict[str, HostQueue] = {}
        self._queued_urls: set[str] = set()
        self._slots = asyncio.Semaphore(settings.max_concurrent_hosts)
        self._workers: asyncio.TaskGroup | None = None

    def _admit(self, task: FetchTask) -> bool:
        """Queue a task unless its URL is already queued, too deep, or over its host's budget."""
        if task.url in self._queued_urls or task.depth > self.settings.max_depth:
            return False
        host = host_of(task.url)
        queue = self._queues.setdefault(host, HostQueue(host))
        if queue.admitted >= self.settings.max_pages_per_host:
            return False
        queue.admitted += 1
        queue.pending.append(task)
        self._queued_urls.add(task.url)
        if not queue.active and self._workers is not None:
            queue.active = True
            self._workers.create_task(self._serve_host(queue))
        return True

    async def run(self, tasks: Iterable[FetchTask]) -> BatchOutput:
        async with asyncio.TaskGroup() as workers:
            self._workers = workers
            for task in tasks:
                self._admit(task)
        self._workers = None
        return self.output

    def _new_client(self) -> httpx.AsyncClient:
        # One small client per host worker: a shared pool scans every connection per request.
        return httpx.AsyncClient(
            follow_redirects=False,
            timeout=httpx.Timeout(self.settings.fetch_timeout_s, connect=self.settings.connect_timeout_s),
            limits=httpx.Limits(max_connections=1, max_keepalive_connections=1),
            trust_env=False,
        )

    async def _serve_host(self, queue: HostQueue) -> None:
        client = self._new_client()
        try:
            while queue.pending:
                wait = queue.next_allowed - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                task = queue.pending.popleft()
                async with self._slots:
                    record, contacted = await self._fetch(client, task)
                if contacted:
                    queue.next_allowed = time.monotonic() + self.settings.default_delay_s
                self.output.records.append(record)
        finally:
            queue.active = False  # set before any await, so _admit never strands a task
            await client.aclose()

    async def _fetch(self, client: httpx.AsyncClient, task: FetchTask) -> tuple[FetchRecord, bool]:
        """Fetch one URL; returns its fetch-log row and whether the host was contacted."""
        host = host_of(task.url)
        record = FetchRecord(url=task.url, host=host, depth=task.depth, status_class="error",
                             fetched_at=datetime.now(timezone.utc))
        started = time.monotonic()
        try:
            ip = await self.resolver.resolve(host)
        except DnsError as exc:
            record.status_class, record.error = "dns_error", str(exc)
            return record, False
        record.ip = ip
        if not address_allowed(host, ip, self.settings.network_exceptions):
            record.status_class = "blocked_address"
            record.error = f"{host} resolves to {ip}, which is not a public address"
            return record, False
        try:
            await asyncio.wait_for(self._exchange(client, task, ip, record),
                                   self.settings.fetch_timeout_s)
        except (asyncio.TimeoutError, httpx.TimeoutException) as exc:
            record.status_class, record.error = "timeout", f"no complete answer in time ({type(exc).__name__})"
        except httpx.ConnectError as exc:
            record.status_class, record.error = "connect_error", str(exc) or type(exc).__name__
        except httpx.HTTPError as exc:
            record.status_class, record.error = "network_error", str(exc) or type(exc).__name__
        except Exception as exc:  # one bad page must not end the batch
            record.status_class, record.error = "error", f"{type(exc).__name__}: {exc}"
        record.duration_ms = round((time.monotonic() - started) * 1000, 3)
        return record, True

    async def _exchange(self, client: httpx.AsyncClient, task: FetchTask, ip: str,
                        record: FetchRecord) -> None:
        parts = urlsplit(task.url)
        port = parts.port or DEFAULT_PORTS[parts.scheme]
        target = parts.path + (f"?{parts.query}" if parts.query else "")
        ip_literal = f"[{ip}]" if ":" in ip else ip
        # Connect to the address we checked, not to whatever a second lookup would return.
        headers = {
            "Host": parts.netloc,
            "User-Agent": self.settings.user_agent,
            "Accept": "text/html,application/xhtml+xml;q=0.9,*/*;q=0.8",
            "Accept-Encoding": "gzip, deflate, br",
        }
        limit = self.settings.max_body_bytes
        async with client.stream("GET", f"{parts.scheme}://{ip_literal}:{port}{target}",
                                 headers=headers, extensions={"sni_hostname": record.host}) as resp:
            body = bytearray()
            truncated = False
            async for chunk in resp.aiter_raw():
                body += chunk
                if len(body) > limit:
                    truncated = True
                    del body[limit:]
                    break
            request_headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in resp.request.headers.raw]
            exchange = Exchange(
                url=task.url, ip=ip, fetched_at=record.fetched_at, method="GET",
                request_target=target, request_headers=request_headers,
                http_version=resp.http_version, status=resp.status_code, reason=resp.reason_phrase,
                response_headers=[(k.decode("latin-1"), v.decode("latin-1")) for k, v in resp.headers.raw],
                body=bytes(body), truncated=truncated,
            )
        location = self.warc.write(exchange)
        record.warc_file, record.warc_offset, record.warc_length = (
            location.filename, location.offset, location.length)
        record.status = resp.status_code
        record.status_class = "too_large" if truncated else status_class_of(resp.status_code)
        record.bytes = len(body)
        record.content_type = resp.headers.get("content-type")
        record.etag = resp.headers.get("etag")
        record.last_modified = resp.headers.get("last-modified")
        self._follow(resp, bytes(body), record, task)

    def _follow(self, resp: httpx.Response, body: bytes, record: FetchRecord, task: FetchTask) -> None:
        """Hash the content, collect outlinks, and queue the ones this batch may fetch."""
        targets: list[str] = []
        if record.status_class == "redirect" and "location" in resp.headers:
            try:
                targets = [normalize_url(resp.headers["location"], task.url)]
            except UrlError as exc:
                record.error = f"bad redirect target: {exc}"
        elif record.status_class in ("ok", "too_large"):
            try:
                content = decode_body(body, resp.headers.get("content-encoding"), self.settings.max_body_bytes)
            except DecodingError as exc:
                record.error = str(exc)
                return
            record.sha256 = hashlib.sha256(content).hexdigest()
            media_type = (record.content_type or "").split(";", 1)[0].strip().lower()
            if media_type in HTML_TYPES:
                targets = extract_links(content, task.url)
        record.outlinks = len(targets)
        for target in targets:
            target_host = host_of(target)
            self.output.links.append((task.url, target, target_host, task.depth + 1))
            if self.follows_links_to(target_host):
                self._admit(FetchTask(target, task.depth + 1))
