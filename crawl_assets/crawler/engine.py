"""The fetch engine of one batch: workers take hosts from the two-level frontier, fetch one
URL per turn, and give the host back with the delay it has earned (see workbench.py for the
invariant that makes politeness structural).

Per turn a worker does exactly one request to the host: robots.txt if the host's policy is
not known yet, else the next URL it may fetch. What the answer means is decided here:
retries with backoff on 5xx and connection errors, Retry-After, redirects hop by hop with
loop detection, robots rules, and which discovered links join this batch.
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime

from rbloom import Bloom

from .clients import ClientPool
from .content import examine
from .decoding import DecodingError, decode_body
from .workbench import FetchTask, Workbench, HostState
from .http_exchange import HopResult, HttpFetcher, retry_after_seconds
from .politeness import HostPoliteness
from .resolver import Resolver
from .robots import RobotsCache, RobotsPolicy, RobotsResponse
from .settings import CrawlSettings
from .trap_defences import TrapDefences
from .urls import UrlError, host_of, normalize_url
from .warc import IDENTICAL_PAYLOAD, SERVER_NOT_MODIFIED, Revisit, WarcFileWriter, payload_digest, warc_date

RETRYABLE_ERRORS = frozenset({"connect_error", "network_error"})
PUSHBACK_STATUSES = frozenset({429, 503})
BATCH_LIMITS = frozenset({"depth", "host_budget"})  # refusals that a later cycle may lift


@dataclass
class FetchRecord:
    """One row of the fetch log: the final outcome of one URL in this batch."""

    url: str
    host: str
    depth: int
    status_class: str
    fetched_at: datetime | None = None
    status: int | None = None
    duration_ms: float = 0.0
    bytes: int = 0
    content_type: str | None = None
    sha256: str | None = None
    etag: str | None = None
    last_modified: str | None = None
    error: str | None = None
    ip: str | None = None
    attempts: int = 0
    redirect_to: str | None = None
    payload_digest: str | None = None  # WARC-Payload-Digest of the body as received
    simhash: int | None = None  # SimHash of an HTML page's main text (unsigned 64-bit)
    warc_type: str | None = None  # response, or revisit when an earlier capture holds the payload
    refers_to: str | None = None  # the URI a revisit record points at
    warc_file: str | None = None
    warc_offset: int | None = None
    warc_length: int | None = None
    outlinks: int = 0


@dataclass
class BatchOutput:
    records: list[FetchRecord] = field(default_factory=list)
    # (source, normalised target, target host, target depth, new to the crawl, dropped reason)
    links: list[tuple[str, str, str, int, bool, str | None]] = field(default_factory=list)
    dropped: dict[str, Counter] = field(default_factory=dict)  # host -> reason -> URLs not queued


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


def origin_of(url: str) -> str:
    scheme, rest = url.split("://", 1)
    return f"{scheme}://{rest.split('/', 1)[0]}"


class FetchEngine:
    def __init__(self, settings: CrawlSettings, warc: WarcFileWriter,
                 follows_links_to: Callable[[str], bool], traps: TrapDefences | None = None,
                 seen: Bloom | None = None, known_payloads: dict[str, tuple[str, str]] | None = None,
                 rng: random.Random | None = None):
        """follows_links_to(host): may links to this host be fetched in this batch?
        seen: the URLs of earlier cycles, so links can be told new or known.
        known_payloads: payload digest -> (URI, WARC-Date) of payloads archived earlier."""
        self.settings = settings
        self.warc = warc
        self.follows_links_to = follows_links_to
        self.traps = traps or TrapDefences()
        self.seen = seen
        self.output = BatchOutput(dropped=self.traps.dropped)
        self.frontier = Workbench(settings.priority_weights,
                                 max_back_queues=max(64, 4 * settings.max_concurrent_hosts), rng=rng)
        self.clients = ClientPool(settings.connect_timeout_s, settings.fetch_timeout_s)
        self.http = HttpFetcher(settings, Resolver(settings.resolver_overrides,
                                                   timeout_s=settings.connect_timeout_s), self.clients)
        self.robots = RobotsCache(self._fetch_robots, settings.user_agent,
                                  ttl_s=settings.robots_ttl_s, error_ttl_s=settings.robots_error_ttl_s)
        self._rng = rng or random.Random()
        self._queued_urls: set[str] = set()
        self._refused: dict[str, str] = {}  # URL -> why it was not queued (counted once)
        self._admitted: Counter[str] = Counter()  # per host, against the page budget
        self._politeness: dict[str, HostPoliteness] = {}
        self._robots_errors: dict[str, HopResult] = {}  # origin -> the hop that failed
        self._archived: dict[str, tuple[str, str]] = dict(known_payloads or {})

    # -- admission -----------------------------------------------------------------------

    def admit(self, task: FetchTask) -> bool:
        """Queue a task unless its URL is already queued, too deep, or over its host's budget."""
        if task.url in self._queued_urls or task.url in self._refused:
            return False
        if task.depth > self.settings.max_depth:
            return self._refuse(task.url, task.host, "depth")
        if self._admitted[task.host] >= self.settings.max_pages_per_host:
            return self._refuse(task.url, task.host, "host_budget")
        self._admitted[task.host] += 1
        self._queued_urls.add(task.url)
        self.frontier.add(task)
        return True

    def _refuse(self, url: str, host: str, reason: str) -> bool:
        self._refused[url] = reason
        self.traps.dropped[host][reason] += 1
        return False

    async def run(self, tasks: Iterable[FetchTask]) -> BatchOutput:
        for task in tasks:
            self.admit(task)
        try:
            await asyncio.gather(*(self._worker() for _ in range(self.settings.max_concurrent_hosts)))
        finally:
            await self.clients.close_all()
        return self.output

    async def _worker(self) -> None:
        while (turn := await self.frontier.acquire()) is not None:
            state, task = turn
            try:
                delay = await self._take_turn(state, task)
            except Exception as exc:  # one bad page must not end the batch
                self._record(FetchRecord(task.url, task.host, task.depth, "error",
                                         error=f"{type(exc).__name__}: {exc}"))
                delay = self.settings.default_delay_s
            if not state.back_queue:
                await self.clients.close(state.host)  # idle hosts hold no connection
            self.frontier.release(state, delay)

    def _politeness_of(self, host: str) -> HostPoliteness:
        if host not in self._politeness:
            s = self.settings
            self._politeness[host] = HostPoliteness(s.default_delay_s, s.response_time_factor,
                                                    s.max_adaptive_delay_s)
        return self._politeness[host]

    # -- one turn ------------------------------------------------------------------------

    async def _take_turn(self, state: HostState, task: FetchTask) -> float:
        """One request to the host; returns how long the host must then be left alone."""
        politeness = self._politeness_of(state.host)
        origin = origin_of(task.url)
        policy = self.robots.cached(origin)
        if policy is None:
            state.back_queue.appendleft(task)  # robots.txt takes this turn; the page waits
            policy = await self.robots.policy(origin)
            self._apply_robots(state, politeness, origin, policy)
            return politeness.next_delay()

        while not policy.allowed(task.url):  # refusals cost the host nothing: no request
            self._record(FetchRecord(task.url, task.host, task.depth, "robots_disallowed",
                                     error=f"robots.txt ({policy.source}) disallows it"))
            if not state.back_queue:
                return 0.0
            task = state.back_queue.popleft()

        conditional = {}
        if task.etag:
            conditional["If-None-Match"] = task.etag
        if task.last_modified:
            conditional["If-Modified-Since"] = task.last_modified
        hop = await self.http.get(task.url, task.host, conditional)
        if hop.contacted and hop.exchange is not None:
            politeness.observe(hop.elapsed_s)
        if self._should_retry(state, task, hop, politeness):
            return politeness.next_delay()
        self._finish(task, hop)
        return politeness.next_delay() if hop.contacted else 0.0

    def _apply_robots(self, state: HostState, politeness: HostPoliteness, origin: str,
                      policy: RobotsPolicy) -> None:
        """A host that cannot be crawled now keeps its URLs for a later cycle, with the reason."""
        reason = None
        failed = self._robots_errors.get(origin)
        if policy.transient and failed is not None:
            # The host could not be reached at all: say why (dns_error, connect_error, ...).
            reason = (failed.error_class, f"robots.txt: {failed.error}")
        elif policy.transient:
            reason = ("robots_unavailable", f"robots.txt could not be read ({policy.source}); "
                                            "the host is left alone until it can")
        elif policy.crawl_delay is not None and policy.crawl_delay > self.settings.max_crawl_delay_s:
            reason = ("deferred_crawl_delay", f"robots.txt asks for Crawl-delay {policy.crawl_delay:g} s, "
                                              f"above the cap of {self.settings.max_crawl_delay_s:g} s")
        else:
            politeness.crawl_delay_s = policy.crawl_delay or 0.0
        if reason:
            for task in self.frontier.drop_host(state):
                self._record(FetchRecord(task.url, task.host, task.depth, reason[0], error=reason[1]))
            return
        # Sitemap lines feed the frontier like links found on the robots.txt "page".
        if policy.sitemaps and state.back_queue:
            first = state.back_queue[0]
            robots_url = f"{origin}/robots.txt"
            self._add_links(dataclasses.replace(first, url=robots_url), None, list(policy.sitemaps))

    def _should_retry(self, state: HostState, task: FetchTask, hop: HopResult,
                      politeness: HostPoliteness) -> bool:
        """Put the task back (first in its host's queue) if the answer deserves another try."""
        status = hop.status
        retryable = hop.error_class in RETRYABLE_ERRORS or (status is not None and status >= 500) \
            or status == 429
        if not retryable or task.attempt >= self.settings.max_attempts:
            return False
        wait = self.settings.retry_base_s * 2 ** (task.attempt - 1) * self._rng.uniform(0.5, 1.5)
        if status in PUSHBACK_STATUSES and hop.headers is not None:
            asked = retry_after_seconds(hop.headers.get("retry-after"))
            if asked is not None:
                if asked > self.settings.max_retry_after_s:
                    return False  # recorded as is; the URL waits for a later cycle
                wait = max(wait, asked)
        politeness.retry_after_s = wait
        state.back_queue.appendleft(dataclasses.replace(task, attempt=task.attempt + 1))
        return True

    # -- outcomes ------------------------------------------------------------------------

    def _record(self, record: FetchRecord) -> None:
        self.output.records.append(record)

    def _finish(self, task: FetchTask, hop: HopResult) -> None:
        record = FetchRecord(task.url, task.host, task.depth, hop.error_class or "error",
                             fetched_at=hop.started_at, ip=hop.ip, error=hop.error,
                             attempts=task.attempt, duration_ms=round(hop.elapsed_s * 1000, 3))
        if hop.exchange is None:
            self._record(record)
            return
        exchange, headers = hop.exchange, hop.headers
        revisit = self._revisit_for(task, exchange, record, hop.truncated)
        location = self.warc.write(exchange, revisit, record.payload_digest)
        record.warc_type = "revisit" if revisit else "response"
        record.refers_to = revisit.refers_to_uri if revisit else None
        record.warc_file, record.warc_offset, record.warc_length = (
            location.filename, location.offset, location.length)
        record.status = exchange.status
        record.status_class = "too_large" if hop.truncated else status_class_of(exchange.status)
        record.bytes = len(exchange.body)
        record.content_type = headers.get("content-type")
        record.etag = headers.get("etag")
        record.last_modified = headers.get("last-modified")
        if record.status_class == "redirect":
            self._follow_redirect(task, record, headers.get("location"))
        elif record.status_class in ("ok", "too_large"):
            self.traps.observe_fetch(task.host)
            facts = examine(exchange.body, record.content_type, headers.get("content-encoding"),
                            task.url, self.settings.max_body_bytes)
            record.sha256, record.error = facts.sha256, facts.error or record.error
            record.simhash = facts.simhash
            if facts.too_large:
                record.status_class = "too_large"
                record.error = "decoded body is larger than the size cap"
            self._add_links(task, record, facts.outlinks)
        self._record(record)

    def _revisit_for(self, task: FetchTask, exchange, record: FetchRecord, truncated: bool) -> Revisit | None:
        """A 304, or a payload archived before, is written as a revisit record, not a copy."""
        if exchange.status == 304:
            when = warc_date(task.last_captured_at) if task.last_captured_at else None
            return Revisit(SERVER_NOT_MODIFIED, task.url if when else None, when)
        if truncated or not 200 <= exchange.status < 300:
            return None
        record.payload_digest = digest = payload_digest(exchange.body)
        earlier = self._archived.get(digest)
        if earlier is not None:
            return Revisit(IDENTICAL_PAYLOAD, *earlier)
        self._archived[digest] = (task.url, warc_date(exchange.fetched_at))
        return None

    def _follow_redirect(self, task: FetchTask, record: FetchRecord, location: str | None) -> None:
        try:
            target = normalize_url(location or "", task.url)
        except UrlError as exc:
            record.error = f"unusable redirect target: {exc}"
            return
        record.redirect_to = target
        chain = task.redirect_chain + (task.url,)
        if target in chain:
            record.status_class, record.error = "redirect_loop", f"redirects back to {target}"
            return
        if len(chain) > self.settings.max_redirects:
            record.status_class = "too_many_redirects"
            record.error = f"more than {self.settings.max_redirects} redirects"
            return
        target_host = host_of(target)
        self.output.links.append((task.url, target, target_host, task.depth, False, None))
        if self.follows_links_to(target_host):
            # A redirect continues the same fetch: same depth, the chain travels along.
            self.admit(FetchTask(target, target_host, task.depth, task.priority, redirect_chain=chain))

    def _add_links(self, task: FetchTask, record: FetchRecord | None, targets: list[str]) -> None:
        if record is not None:
            record.outlinks = len(targets)
        depth = task.depth + 1
        priority = min(task.priority + 1, len(self.settings.priority_weights))
        for target in targets:
            target_host = host_of(target)
            if target in self._queued_urls or target in self._refused:  # decided already
                reason = self._refused.get(target)
                # This batch's depth and budget limits say nothing about the URL itself.
                reason = None if reason in BATCH_LIMITS else reason
                self.output.links.append((task.url, target, target_host, depth, False, reason))
                continue
            is_new = self.seen is None or target not in self.seen
            reason = self.traps.reason(target, target_host)
            if reason is not None:
                self._refused[target] = reason
            if is_new and reason is None:
                self.traps.observe_new_url(target_host, target)
            self.output.links.append((task.url, target, target_host, depth, is_new, reason))
            if reason is None and self.follows_links_to(target_host):
                self.admit(FetchTask(target, target_host, depth, priority))

    # -- robots.txt ----------------------------------------------------------------------

    async def _fetch_robots(self, url: str) -> RobotsResponse:
        """robots.txt, following up to 5 redirects (each hop through the address guard)."""
        origin = origin_of(url)
        for _ in range(ROBOTS_MAX_REDIRECTS + 1):
            hop = await self.http.get(url, host_of(url), limit=ROBOTS_FETCH_LIMIT)
            if hop.exchange is None:
                self._robots_errors[origin] = hop
                return RobotsResponse(None)
            status, location = hop.exchange.status, hop.headers.get("location")
            if 300 <= status < 400 and location:
                try:
                    url = normalize_url(location, url)
                except UrlError:
                    return RobotsResponse(status)
                continue
            try:
                body = decode_body(hop.exchange.body, hop.headers.get("content-encoding"),
                                   ROBOTS_FETCH_LIMIT)[0]
            except DecodingError:
                body = b""
            return RobotsResponse(status, body)
        return RobotsResponse(None)  # too many redirects: unreachable


ROBOTS_MAX_REDIRECTS = 5
ROBOTS_FETCH_LIMIT = 512 * 1024  # a little over the 500 KiB RFC 9309 asks parsers to read
