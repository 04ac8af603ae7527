"""The fetch path of the browser's requests: the same HttpExchanger (address guard, body cap,
time limits), robots.txt rules and per-host politeness as the fetch engine, on the engine's
own VisitState of each host, so a host's delay counts across plain and rendered fetches.

One request in flight per host: each host has a lock held for the whole exchange. The delay:
a request waits until the host's last answer plus its delay (politeness.py), and afterwards the
host's next_allowed is moved on, so the engine's next turn at that host waits too. robots.txt of
a host not seen yet is fetched once, through the same slot; a robots.txt that redirects is
taken as unreadable (nothing of that host is fetched for the browser).

Archived once: each exchange is written by the fetch engine's AnswerRecorder (archive()), so a
payload archived before, today or on an earlier day, becomes a revisit record as a page's does.
Asked once a day: an answer the HTTP caching rules let the browser reuse is served again from
the batch's SubresourceCache (subresource_cache.py) without a request, and a stale one with
validators is asked for conditionally (a 304 is archived as a revisit of the stored answer)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from ..fetching.answer_policy import ROBOTS_FETCH_LIMIT
from ..fetching.answer_records import AnswerRecorder
from ..fetching.http_exchange import HopResult, HttpExchanger
from ..fetching.politeness import HostPoliteness
from ..fetching.visit_state import RobotsEntry, VisitState
from ..settings import CrawlSettings
from ..url_policy.robots import RobotsResponse, policy_from_response, robots_ttl
from ..url_policy.urls import host_of, origin_of
from .subresource_cache import SubresourceCache


@dataclass(frozen=True)
class Refusal:
    """A browser request the crawler does not make, and why."""

    url: str
    reason: str  # out_of_scope, robots, crawl_delay_cap, unreachable; render_page's: not_a_get, media


class PoliteFetcher:
    def __init__(self, settings: CrawlSettings, exchanger: HttpExchanger, recorder: AnswerRecorder,
                 hosts: dict[str, VisitState], clock, in_scope: Callable[[str], bool]):
        """hosts: the engine's VisitState by host (shared: one delay per host for both paths);
        recorder: the engine's (one archive, one table of the payloads archived)."""
        self.settings, self.exchanger, self.recorder = settings, exchanger, recorder
        self.hosts, self.clock, self.in_scope = hosts, clock, in_scope
        self._locks: dict[str, asyncio.Lock] = {}
        self.cache = SubresourceCache(clock)
        self.requests = 0  # requests made for the browser (robots.txt included)
        self.robots_requests = 0  # of them, for robots.txt

    def _state(self, host: str) -> VisitState:
        if host not in self.hosts:
            self.hosts[host] = VisitState(host, HostPoliteness.from_settings(self.settings))
        return self.hosts[host]

    async def fetch(self, url: str) -> HopResult | Refusal:
        """GET url for the browser, politely, or serve it from the cache; an exchange made is
        written to the WARC."""
        host = host_of(url)
        if not host or not self.in_scope(host):
            return Refusal(url, "out_of_scope")
        state = self._state(host)
        known = state.robots_entry(origin_of(url), self.clock.now())
        if known is not None and self._refusal(known, url) is None:  # no need to wait for the host's slot
            cached = self.cache.fresh(url)
            if cached is not None:
                return cached
        async with self._locks.setdefault(host, asyncio.Lock()):
            entry = await self._robots(state, origin_of(url))
            refusal = self._refusal(entry, url)
            if refusal is not None:
                return refusal
            cached = self.cache.fresh(url)  # stored while this request waited for the slot
            if cached is not None:
                return cached
            state.politeness.crawl_delay_s = entry.policy.crawl_delay or 0.0
            stale = self.cache.entry(url)
            validators = stale.validators() if stale is not None else {}
            hop = await self._request(state, url, extra_headers=validators)
        if hop.exchange is None:
            return hop
        if validators and hop.status == 304:
            self.recorder.archive(hop.exchange, hop.truncated, stale.digest, stale.hop.started_at)
            return self.cache.refreshed(url, stale, hop)
        self.cache.store(url, hop, self.recorder.archive(hop.exchange, hop.truncated))
        return hop

    def _refusal(self, entry: RobotsEntry, url: str) -> Refusal | None:
        """Why robots.txt (or its absence) keeps `url` from being fetched, if it does."""
        if entry.policy.transient:
            return Refusal(url, "unreachable")
        if (entry.policy.crawl_delay or 0.0) > self.settings.max_crawl_delay_s:
            return Refusal(url, "crawl_delay_cap")
        if not entry.policy.allowed(url):
            return Refusal(url, "robots")
        return None

    async def _robots(self, state: VisitState, origin: str) -> RobotsEntry:
        entry = state.robots_entry(origin, self.clock.now())
        if entry is not None:
            return entry
        hop = await self._request(state, origin + "/robots.txt", ROBOTS_FETCH_LIMIT)
        self.robots_requests += 1
        status = hop.status if hop.exchange is not None and not 300 <= hop.status < 400 else None
        policy = policy_from_response(RobotsResponse(status, hop.exchange.body if status else b""),
                                      self.settings.user_agent)
        ttl = robots_ttl(policy, self.settings.robots_ttl_s, self.settings.robots_error_ttl_s)
        state.robots[origin] = entry = RobotsEntry(policy, self.clock.now() + ttl, applied=True)
        return entry

    async def _request(self, state: VisitState, url: str, limit: int | None = None,
                       extra_headers: dict[str, str] | None = None) -> HopResult:
        """One request in the host's slot (the caller holds its lock), spaced by its delay."""
        if state.answered_at is not None:
            wait = state.answered_at + state.politeness.delay() - self.clock.now()
            if wait > 0:
                await asyncio.sleep(wait)
        hop = await self.exchanger.get(url, state, extra_headers or None, limit=limit)
        self.requests += 1
        if hop.contacted:
            state.politeness.observe(hop.elapsed_s)
            state.answered_at = self.clock.now()
            state.next_allowed = state.answered_at + state.politeness.delay()
        return hop

    async def close(self) -> None:
        """Close the connections the browser's requests opened (idle hosts hold none)."""
        for state in self.hosts.values():
            if state.connection is not None:
                connection, state.connection = state.connection, None
                await connection.aclose()
