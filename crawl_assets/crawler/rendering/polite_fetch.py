"""The fetch path of the browser's requests: the same HttpExchanger (address guard, body cap,
time limits), robots.txt rules and per-host politeness as the fetch engine, on the engine's
own VisitState of each host, so a host's delay counts across plain and rendered fetches.

One request in flight per host: each host has a lock held for the whole exchange. The delay:
a request waits until the host's last answer plus its delay (politeness.py), and afterwards the
host's next_allowed is moved on, so the engine's next turn at that host waits too. robots.txt of
a host not seen yet is fetched once, through the same slot; a robots.txt that redirects is
taken as unreadable (nothing of that host is fetched for the browser)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from ..archive.warc import WarcFileWriter
from ..fetching.answer_policy import ROBOTS_FETCH_LIMIT
from ..fetching.http_exchange import HopResult, HttpExchanger
from ..fetching.politeness import HostPoliteness
from ..fetching.visit_state import RobotsEntry, VisitState
from ..settings import CrawlSettings
from ..url_policy.robots import RobotsResponse, policy_from_response, robots_ttl
from ..url_policy.urls import host_of, origin_of


@dataclass(frozen=True)
class Refusal:
    """A browser request the crawler does not make, and why."""

    url: str
    reason: str  # out_of_scope, robots, crawl_delay_cap, unreachable


class PoliteFetcher:
    def __init__(self, settings: CrawlSettings, exchanger: HttpExchanger, warc: WarcFileWriter,
                 hosts: dict[str, VisitState], clock, in_scope: Callable[[str], bool]):
        """hosts: the engine's VisitState by host (shared: one delay per host for both paths)."""
        self.settings, self.exchanger, self.warc = settings, exchanger, warc
        self.hosts, self.clock, self.in_scope = hosts, clock, in_scope
        self._locks: dict[str, asyncio.Lock] = {}
        self.requests = 0  # requests made for the browser (robots.txt included)

    def _state(self, host: str) -> VisitState:
        if host not in self.hosts:
            self.hosts[host] = VisitState(host, HostPoliteness.from_settings(self.settings))
        return self.hosts[host]

    async def fetch(self, url: str) -> HopResult | Refusal:
        """GET url for the browser, politely; its exchange is written to the WARC."""
        host = host_of(url)
        if not host or not self.in_scope(host):
            return Refusal(url, "out_of_scope")
        state = self._state(host)
        async with self._locks.setdefault(host, asyncio.Lock()):
            entry = await self._robots(state, origin_of(url))
            if entry.policy.transient:
                return Refusal(url, "unreachable")
            crawl_delay = entry.policy.crawl_delay or 0.0
            if crawl_delay > self.settings.max_crawl_delay_s:
                return Refusal(url, "crawl_delay_cap")
            if not entry.policy.allowed(url):
                return Refusal(url, "robots")
            state.politeness.crawl_delay_s = crawl_delay
            hop = await self._request(state, url)
        if hop.exchange is not None:
            self.warc.write(hop.exchange)
        return hop

    async def _robots(self, state: VisitState, origin: str) -> RobotsEntry:
        entry = state.robots_entry(origin, self.clock.now())
        if entry is not None:
            return entry
        hop = await self._request(state, origin + "/robots.txt", ROBOTS_FETCH_LIMIT)
        status = hop.status if hop.exchange is not None and not 300 <= hop.status < 400 else None
        policy = policy_from_response(RobotsResponse(status, hop.exchange.body if status else b""),
                                      self.settings.user_agent)
        ttl = robots_ttl(policy, self.settings.robots_ttl_s, self.settings.robots_error_ttl_s)
        state.robots[origin] = entry = RobotsEntry(policy, self.clock.now() + ttl, applied=True)
        return entry

    async def _request(self, state: VisitState, url: str, limit: int | None = None) -> HopResult:
        """One request in the host's slot (the caller holds its lock), spaced by its delay."""
        if state.answered_at is not None:
            wait = state.answered_at + state.politeness.delay() - self.clock.now()
            if wait > 0:
                await asyncio.sleep(wait)
        hop = await self.exchanger.get(url, state, limit=limit)
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
