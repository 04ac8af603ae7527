"""The fetch engine of one batch: it schedules turns. Workers take hosts from the workbench,
make exactly one request to the host per turn, and give the host back with the delay it has
earned (see workbench.py for the invariant that makes politeness structural).

A turn's request is always to the host of the turn: the host's robots.txt when its rules are
not known yet, a hop of some host's robots.txt redirect, or its next page. So every request,
redirect hops and robots.txt included, takes the slot of the host it goes to:
- a robots.txt redirect to another host becomes a task at the head of that host's queue,
  and the first host is parked (no turns) until that chain of hops ends;
- a page redirect is not followed inline: the target is admitted as a task of its own host
  (recorded as a link), so the target's robots.txt, delay, one-in-flight rule and page
  budget apply to it like to any URL (admission.py).
A robots.txt hop to a host of another shard still takes that host's slot in this batch, but
the other shard's process does not see it: the one request per hop may then come closer to
that host's own requests than its delay (shards split hosts, and a hop crosses them).
What an answer means is answer_policy.py's to say; what it leaves behind is answer_records.py's.
"""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import random
from contextlib import contextmanager
from datetime import datetime, timezone
from collections.abc import Callable, Iterable, Mapping

from rbloom import Bloom

from ..archive.warc import WarcFileWriter
from ..crawl_errors import BatchStopped
from ..settings import CrawlSettings
from ..url_policy.https_hosts import HttpsHosts
from ..url_policy.robots import policy_from_response, product_token, robots_ttl
from ..url_policy.trap_defences import TrapDefences
from ..url_policy.url_aliases import AliasRules
from ..url_policy.url_bloom import ShardSeenFilter
from ..url_policy.urls import host_of, origin_of
from ..vocabulary import StatusClass
from .admission import Admission
from .answer_policy import (ROBOTS_FETCH_LIMIT, LeaveHostAlone, Outcome, Redirect, Retry, RobotsAnswer,
                            judge_answer, judge_robots_answer)
from .answer_records import AnswerRecorder
from .clients import ConnectionFactory
from .clock import LoopStalls, MonotonicClock
from .dated_refresh import DatedRefresh
from .fetch_record import BatchOutput, FetchRecord
from .http_exchange import HopResult, HttpExchanger
from .leases import LeaseTable
from .politeness import HostPoliteness
from .resolver import Resolver
from .tls import client_context
from .visit_state import RobotsEntry, VisitState
from .workbench import FetchTask, Workbench


# While a batch runs, the young generation is collected every YOUNG_GC_THRESHOLD net
# allocations of tracked objects instead of Python's default 700. Each page leaves some 30
# containers that live on (its record, its links' tasks), so the default collected every
# ~20 pages, walking the young objects of every turn in flight each time: a share of a
# batch's CPU that this threshold mostly saves (bench/README.md). What refcounting cannot
# free (cycles) waits longer.
YOUNG_GC_THRESHOLD = 10_000


@contextmanager
def fewer_young_collections():
    """The process's collector thresholds while a batch runs (restored afterwards). The
    objects alive when the batch starts (modules; in a Dagster run, Dagster's and the
    inputs' too: 150,000 and more) are frozen out of the collections meanwhile, so an
    old-generation collection walks the batch's own objects only; gc.unfreeze gives them
    back at the end, any cycles among them included."""
    before = gc.get_threshold()
    gc.set_threshold(max(before[0], YOUNG_GC_THRESHOLD), *before[1:])
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)


class FetchEngine:
    def __init__(self, settings: CrawlSettings, warc: WarcFileWriter,
                 follows_links_to: Callable[[str], bool], traps: TrapDefences | None = None,
                 seen: Bloom | ShardSeenFilter | None = None, known_payloads: Mapping[str, tuple[str, str]] | None = None,
                 rng: random.Random | None = None, clock=None,
                 connections: ConnectionFactory | None = None, max_pages: int | None = None,
                 dated_refresh: DatedRefresh | None = None, https_hosts: Iterable[str] = (),
                 aliases: AliasRules | None = None, own_hosts: Callable[[str], bool] | None = None):
        """follows_links_to(host): may links to this host be fetched in this batch?
        seen: the URLs of earlier cycles, so links can be told new or known (admission.py).
        known_payloads: payload digest -> (URI, WARC-Date) of payloads archived earlier.
        max_pages: URLs found in the batch join while it holds fewer (admission.py).
        dated_refresh: pages a sitemap or feed dates after our copy, fetched the same day (dated_refresh.py).
        https_hosts: hosts known to serve their pages over https (url_policy/https_hosts.py).
        aliases: URL aliases learnt so far: links are folded by them (url_policy/url_aliases.py).
        own_hosts(host): is the host one of the batch's shard (only theirs grow: admission.py)?
        clock, connections: injectable for tests (clock.py, clients.py)."""
        self.settings = settings
        traps = traps or TrapDefences()
        self.clock = clock or MonotonicClock()
        self.workbench = Workbench(settings.priority_weights, max_back_queues=max(64, 4 * settings.max_concurrent_hosts),
                                   rng=rng, clock=self.clock, new_host=self._new_host)
        self.https = HttpsHosts(https_hosts)  # learns from the batch's answers too
        self.admission = Admission(self.workbench, settings.max_depth, settings.max_pages_per_host, traps,
                                   follows_links_to, seen, max_pages, self.https, aliases, own_hosts)
        self.output = BatchOutput(links=self.admission.links, dropped=traps.dropped)
        # What the first requests would otherwise load inside the event loop, while answers wait
        # (a timeout must measure the server, not our stall): the TLS trust store, the sketches.
        traps.load_growth_sketches()
        connections = connections or ConnectionFactory(tls_context=client_context(settings.ca_bundle,
                                                                                   settings.ca_bundle_mode))
        self.stalls = LoopStalls()  # what no time limit counts against a server (clock.py)
        self.exchanger = HttpExchanger(settings, Resolver(settings.resolver_overrides, timeout_s=settings.connect_timeout_s),
                                       connections, self.stalls)
        self.recorder = AnswerRecorder(warc, settings.max_body_bytes, traps, known_payloads,
                                       agent=product_token(settings.user_agent).lower())
        self._rng = rng or random.Random()
        self.leases = LeaseTable(self.clock, settings.lease_timeout_s)
        # Called after each turn with the host's VisitState: the batch tops the host's queue
        # up from the frontier's rest on disk (crawler/batches/disk_frontier.py), or None.
        self.top_up: Callable[[VisitState], None] | None = None
        self.dated_refresh = dated_refresh

    def _new_host(self, host: str) -> VisitState:
        return VisitState(host, HostPoliteness.from_settings(self.settings))

    async def run(self, tasks: Iterable[FetchTask], on_tick: Callable[[], None] | None = None,
                  tick_s: float = 60.0) -> BatchOutput:
        """on_tick: called every tick_s seconds between turns (checkpoints, crawler/batches/progress.py); an
        exception it raises ends the batch. Each tick also puts back the tasks of expired
        leases (leases.py)."""
        for task in tasks:
            self.admission.admit(task)
        self.stalls.start()
        workers = [asyncio.create_task(self._worker()) for _ in range(self.settings.max_concurrent_hosts)]
        ticker = asyncio.create_task(self._tick(on_tick, tick_s))
        try:
            # The first worker or tick to fail (BatchStopped: the disk is full) stops the rest.
            pending = {*workers, ticker}
            while not all(worker.done() for worker in workers):
                done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for finished in done:
                    finished.result()
        finally:
            for task in (*workers, ticker):
                task.cancel()
            await asyncio.gather(*workers, ticker, return_exceptions=True)
            for state in self.workbench.hosts.values():
                await self._disconnect(state)
            self.stalls.stop()
        return self.output

    def run_blocking(self, tasks: Iterable[FetchTask], **kwargs) -> BatchOutput:
        """run() to the end on a fresh event loop. Not asyncio.run(self.run(...)) itself: when
        asyncio.run restores the SIGINT handler, Python 3.11 builds an error message holding
        the repr of the main task, result included, i.e. of every record and link of the
        batch (CPU time that grows with the batch). The task here returns nothing."""
        async def whole_batch() -> None:
            await self.run(tasks, **kwargs)

        with fewer_young_collections():
            asyncio.run(whole_batch())
        return self.output

    async def _tick(self, on_tick: Callable[[], None] | None, tick_s: float) -> None:
        while True:
            await asyncio.sleep(tick_s)
            for task in self.leases.expired():  # its worker is gone or stuck: queue it again
                self.workbench.add_first(task)
            if on_tick is not None:
                on_tick()

    async def _worker(self) -> None:
        while (turn := await self.workbench.acquire()) is not None:
            state, task = turn
            lease = self.leases.grant(task)
            try:
                delay = await self._take_turn(state, task)
            except BatchStopped:
                raise
            except Exception as exc:  # one bad page must not end the batch
                self._record(FetchRecord(task.url, task.host, task.depth, StatusClass.ERROR,
                                         error=f"{type(exc).__name__}: {exc}"))
                delay = self.settings.default_delay_s
            finally:
                self.leases.finish(lease)
            if self.top_up is not None:
                self.top_up(state)
            if not state.back_queue:
                await self._disconnect(state)  # idle hosts hold no connection
            self.workbench.release(state, delay, park=self._waits_elsewhere(state))

    @staticmethod
    def _waits_elsewhere(state: VisitState) -> bool:
        """The host's next page waits for its robots.txt, whose redirect led to another host."""
        if not state.robots_pending or not state.back_queue:
            return False
        head = state.back_queue[0]
        return head.robots_for is None and origin_of(head.url) in state.robots_pending

    @staticmethod
    async def _disconnect(state: VisitState) -> None:
        if state.connection is not None:
            connection, state.connection = state.connection, None
            await connection.aclose()

    def _record(self, record: FetchRecord) -> None:
        self.output.records.append(record)

    # -- one turn ------------------------------------------------------------------------

    async def _take_turn(self, state: VisitState, task: FetchTask) -> float:
        """At most one request to the host; returns how long the host must then be left alone.
        A turn that asks nothing returns 0: the delay since the last request has passed."""
        if state.left_alone is not None:  # the host asked for more than we wait: no request
            self._answer_unasked(state, task)
            return 0.0
        if task.robots_for is not None:
            return await self._robots_turn(state, task)
        origin = origin_of(task.url)
        if origin in state.robots_pending:  # its robots.txt hop is elsewhere: the host parks
            state.back_queue.appendleft(task)
            return 0.0
        entry = state.robots_entry(origin, self.clock.now())
        if entry is None:
            # robots.txt takes this turn; the page waits at the head of the queue.
            state.back_queue.appendleft(task)
            return await self._robots_turn(state, FetchTask(origin + "/robots.txt", state.host, task.depth,
                                                            task.priority, robots_for=origin))
        if not entry.applied:  # learned through a hop at another host: act on it now
            state.back_queue.appendleft(task)
            if not self._apply_robots(state, origin, entry):
                return 0.0  # the host was dropped; nothing was asked of it this turn
            owed = self._delay_owed(state)
            if owed > 0:  # the page waits at the head of the queue
                return owed
            state.back_queue.popleft()
        if not entry.policy.allowed(task.url):  # refusals cost the host nothing: no request
            self._record(FetchRecord(task.url, task.host, task.depth, StatusClass.ROBOTS_DISALLOWED,
                                     error=f"robots.txt ({entry.policy.source}) disallows it"))
            return 0.0
        return await self._page_turn(state, task)

    async def _page_turn(self, state: VisitState, task: FetchTask) -> float:
        conditional = {}
        if task.etag:
            conditional["If-None-Match"] = task.etag
        if task.last_modified:
            conditional["If-Modified-Since"] = task.last_modified
        hop = await self.exchanger.get(task.url, state, conditional)
        politeness = state.politeness
        self._observe(state, hop)
        verdict = judge_answer(task, hop, self.settings, self._rng)
        if isinstance(verdict, Retry):
            politeness.retry_after_s = verdict.wait_s
            state.back_queue.appendleft(dataclasses.replace(task, attempt=task.attempt + 1))
            return politeness.next_delay()
        if isinstance(verdict, Outcome):
            politeness.retry_after_s = verdict.host_wait_s  # spaces the host's next URL too
        record, found = self.recorder.record(task, hop, verdict)
        sts = hop.header("strict-transport-security")
        if sts is not None:
            record = dataclasses.replace(record, hsts=self.https.observe_hsts(task.url, sts))
        if isinstance(verdict, LeaveHostAlone):
            self._record(record)
            self._leave_alone(state, (StatusClass.DEFERRED_RETRY_AFTER, (
                f"not asked: {task.url} answered {hop.status} with Retry-After {verdict.asked_s:.0f} s, "
                f"above max_retry_after_s ({self.settings.max_retry_after_s:g} s); left for a later cycle")))
            return self._delay_after(state, hop)
        if isinstance(verdict, Redirect):
            self.https.observe_redirect(task.url, verdict.target)
            self.admission.redirect_found(task, verdict.target, verdict.chain)
        elif found.follow or found.unfollowed:
            self.admission.links_found(task, found.follow, found.unfollowed, found.reason, listed=found.listed)
        if found.dated and self.dated_refresh is not None:
            self._refresh_dated(task, found.dated)
        self._record(record)
        return self._delay_after(state, hop)

    def _refresh_dated(self, listing: FetchTask, dated: list) -> None:
        """Queue the pages the listing dates after our copy, while the allowance lasts."""
        for url in self.dated_refresh.candidates(dated):
            if self.dated_refresh.left <= 0:
                return
            if self.admission.admit(FetchTask(url, host_of(url), listing.depth + 1, listing.priority)):
                self.dated_refresh.spend()

    def _leave_alone(self, state: VisitState, reason: tuple[StatusClass, str]) -> None:
        """No more requests to this host in this batch: its queued URLs, and any that come
        later, are answered without asking it (recorded with `reason`)."""
        state.left_alone = reason
        for task in self.workbench.drop_host(state):
            self._answer_unasked(state, task)

    def _answer_unasked(self, state: VisitState, task: FetchTask) -> None:
        """A task of a host left alone: a page is recorded with the reason; a robots.txt
        (the host's own, or a hop of another host's) counts as unreachable."""
        status_class, error = state.left_alone
        if task.robots_for is None:
            self._record(FetchRecord(task.url, task.host, task.depth, status_class, error=error))
            return
        unasked = HopResult(task.url, datetime.now(timezone.utc), error_class=status_class, error=error)
        self._robots_answered(state, task, unasked)

    def _observe(self, state: VisitState, hop: HopResult) -> None:
        if hop.contacted:
            state.answered_at = self.clock.now()
        if hop.contacted and hop.exchange is not None:
            state.politeness.observe(hop.elapsed_s)

    def _delay_owed(self, state: VisitState) -> float:
        """What is left of the host's delay since its last request, by its rules as they are
        now: a Crawl-delay learnt through a robots.txt redirect to another host counts from the
        host's own robots.txt request, which was spaced by the delay it knew then."""
        if state.answered_at is None:
            return 0.0
        return max(0.0, state.answered_at + state.politeness.delay() - self.clock.now())

    # -- robots.txt ----------------------------------------------------------------------

    async def _robots_turn(self, state: VisitState, task: FetchTask) -> float:
        """One robots.txt request (the host's own, or a redirect hop of some host's) in this
        host's turn. The host whose robots.txt it is learns the answer or waits for the next hop."""
        hop = await self.exchanger.get(task.url, state, limit=ROBOTS_FETCH_LIMIT)
        self._observe(state, hop)
        return self._robots_answered(state, task, hop)

    def _robots_answered(self, state: VisitState, task: FetchTask, hop: HopResult) -> float:
        """Act on a robots.txt answer (or failure) in this host's turn; returns the delay."""
        origin = task.robots_for
        owner = self.workbench.state_of(host_of(origin + "/"))
        verdict = judge_robots_answer(task, hop)
        if not isinstance(verdict, RobotsAnswer):
            # A redirect: the next hop is a request to its own host, so it waits for that
            # host's turn, at the head of its queue; the owner parks until the chain ends.
            self.https.observe_redirect(task.url, verdict.url)
            owner.robots_pending.add(origin)
            self.workbench.add_first(dataclasses.replace(
                task, url=verdict.url, host=host_of(verdict.url), redirect_chain=verdict.chain))
            return self._delay_after(state, hop)
        policy = policy_from_response(verdict.response, self.settings.user_agent)
        ttl = robots_ttl(policy, self.settings.robots_ttl_s, self.settings.robots_error_ttl_s)
        owner.robots[origin] = entry = RobotsEntry(policy, self.clock.now() + ttl, verdict.failure)
        owner.robots_pending.discard(origin)
        if owner is state:
            self._apply_robots(state, origin, entry)
        else:
            self.workbench.unpark(owner)  # its next turn applies the rules, then fetches
        return self._delay_after(state, hop)  # after the rules: a Crawl-delay counts already

    @staticmethod
    def _delay_after(state: VisitState, hop: HopResult) -> float:
        """The host's delay after a request; none if the host was never contacted."""
        return state.politeness.next_delay() if hop.contacted else 0.0

    def _apply_robots(self, state: VisitState, origin: str, entry: RobotsEntry) -> bool:
        """Act on newly learned rules in the host's own turn: Crawl-delay, Sitemap lines, or,
        when the host cannot be crawled now, drop its queued URLs with the reason (they stay
        known for a later cycle). The host is checked out and the page that asked is at the
        head of its queue. False when the host was dropped."""
        state.robots[origin] = dataclasses.replace(entry, applied=True)
        policy = entry.policy
        reason = None
        if policy.transient and entry.failure is not None:
            reason = entry.failure  # the host could not be reached at all: dns_error, connect_error, ...
        elif policy.transient:
            reason = (StatusClass.ROBOTS_UNAVAILABLE, f"robots.txt could not be read ({policy.source}); "
                                                      "the host is left alone until it can")
        elif policy.crawl_delay is not None and policy.crawl_delay > self.settings.max_crawl_delay_s:
            reason = (StatusClass.DEFERRED_CRAWL_DELAY,
                      f"robots.txt asks for Crawl-delay {policy.crawl_delay:g} s, "
                      f"above the cap of {self.settings.max_crawl_delay_s:g} s")
        else:
            state.politeness.crawl_delay_s = policy.crawl_delay or 0.0
        if reason:
            for task in self.workbench.drop_host(state):
                if task.robots_for is not None:  # another host's robots.txt hop: still owed
                    self.workbench.add_first(task)
                else:
                    self._record(FetchRecord(task.url, task.host, task.depth, reason[0], error=reason[1]))
            return False
        # Sitemap lines feed the batch like links found on the robots.txt "page" (at the
        # depth and priority of the page that asked for it).
        if policy.sitemaps and state.back_queue:
            robots_page = dataclasses.replace(state.back_queue[0], url=f"{origin}/robots.txt")
            self.admission.links_found(robots_page, list(policy.sitemaps), listed=True)
        return True
