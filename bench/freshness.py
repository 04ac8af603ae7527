"""Freshness benchmark: five recrawl policies on a simulated web with known change rates.

    .venv/bin/python bench/freshness.py [--scenario poisson|bursty] [--cold-start] [--urls 100000]
        [--days 90] [--budget-share 0.1] [--hosts 1000] [--seed 7] [--first-day-last-modified] [--keep DIR]

Two webs. --scenario bursty (bursty_web.py, where its docstring says which published study
each part follows): frozen hosts, pages that change at their host's releases, irregular
template rebuilds that touch most of a host at once (bytes, not text), a few hot pages,
sitemaps with <lastmod> on half the hosts; freshness is byte-level. The policies, the plan
and the measures below are the same; its last line starts `freshness scenario=bursty`.

--cold-start: ours knows one home page per host (and the sitemaps a robots.txt would name)
and learns every other page through links: site_graph.py builds the links (depth, in-links,
pages reachable only deep down, hosts of template listing pages, hosts with query aliases,
sitemaps, pages that appear during the run) and cold_start.py runs the day's fetch batch and
close around the project's steps (trap defences, host demotion, known URLs). The baselines
start from a full copy of every page there on day 0 and fetch a page that appears on the day
it appears (they know it is there). A page counts from the day it appears, stale until its
first fetch; freshness is averaged over days COLD_FROM_DAY..D. The last line ends with
` cold_start=1 coverage_d7= days_to_cover=` (the share of the pages there by day 7 fetched by
then; the first day by which 99 % of the pages there on day 0 had been fetched once).

The Poisson web (the default): --urls pages on --hosts hosts. Each page changes as a Poisson process with its own
rate (changes a day), drawn from a skewed spread: 35 % never change, 35 % change every one
to six months, 20 % every few days to a month, 8 % daily-ish, 2 % 2-10 times a day. Importance
is power-law: w = 1 + in-links, in-links ~ Zipf(1.8) - 1. Hosts differ the way real ones do:
40 % send an honest Last-Modified and an ETag (304 when unchanged), 30 % no validators, 30 %
a Last-Modified that is always "now"; on 30 % of hosts a counter changes every page view
(payload digest changes, SimHash moves <= 2 bits: not a change). 5 % of hosts ask for a
1-hour crawl delay (at most 24 fetches a day). By default each page has changed before the
crawl began: at the first fetch its last change (its Last-Modified on honest hosts) lies Exp(λ)
back, up to a year. With --first-day-last-modified every page's history starts at the crawl's
first day (00:00 UTC), as on a web put online that morning: its first Last-Modified is that
moment, or a change after it (a fast page may change before its first fetch). Day 0 fetches
every page once; days 1..D
fetch at most budget = budget-share x urls pages a day (each at most once a day, at a
random hour in the first half of the day), and never more than a host's cap.

Policies, all with the same budget, caps and change signal (a change of the page's bytes,
less the per-view counter, since the previous fetch: what change_stats' default change
definition, "archive", counts):
- uniform: every page at the same frequency (budget / urls a day);
- proportional: frequency proportional to the TRUE rate;
- nutch_adaptive: Nutch's AdaptiveFetchSchedule: interval starts at urls / budget days,
  x1.4 after an unchanged fetch, x0.8 after a changed one, within [1, 90] days;
- optimal: the ceiling: the project's recrawl_priorities (the freshness-optimal allocation
  within the politeness caps and its daily plan) fed the TRUE rates and last fetch times;
- optimal_periodic (for reference): the same optimal frequencies from the TRUE rates, but
  scheduled like the fixed-frequency policies. The daily plan, which fetches due pages by
  expected gain given the time since their last fetch, beats that periodic schedule, so
  the ceiling is measured with the same plan ours uses: gap_closed then measures what
  estimating the rates from fetch results costs;
- adaptive (ours): sees only fetch results. Each day the simulator writes the day's fetch-log
  Parquet (the crawl's FETCH_LOG_SCHEMA, hive date=D/shard=s00), runs the project's daily
  change_stats (that day's fetches folded into the day before's statistics, as the asset
  does) and recrawl_priorities for the next day, and fetches the plan.
Fixed-frequency policies fetch, each day, the pages most overdue relative to their frequency
((day - last fetch) x f), so each policy uses the whole budget.

Freshness: the share of time a page's stored copy equals the live page, weighted by
importance, integrated exactly over each day, averaged over days 31..D. Age: the time since
the live page first changed after our copy (0 when fresh), weighted the same way.

How fast ours learns the rates: the Spearman rank correlation of change_stats' change_rate
with the true rate over every URL, after the change_stats of day 2, day 7 and the last day
(rate_spearman_d2, _d7, _end; the share of URLs still on their pool's prior, change_stats'
on_prior over every URL, a URL it does not list counting as on it, is printed beside each;
change_stats' own urls_on_prior_share, over the URLs it lists, is on_prior_share_d2, _d7, _end),
and never_changing_share: the share of the last day's page fetches spent on pages whose true
rate is 0 (it is shown for the ceiling too).

Run on the 2-core machine of this session (100,000 URLs, 90 days): about 2-3 minutes, most of
it the adaptive policy's 90 change_stats + recrawl_priorities runs. The last line is
machine-readable: freshness urls= budget_per_day= days= adaptive= uniform= proportional= nutch_adaptive=
optimal= gap_closed= rate_spearman_d2= rate_spearman_d7= rate_spearman_end= never_changing_share=
on_prior_share_d2= on_prior_share_d7= on_prior_share_end=
with gap_closed = (adaptive - uniform) / (optimal - uniform); ` first_day_lm=1` ends it in the
--first-day-last-modified case.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from crawl_assets.crawler.batches.arrow_schemas import FETCH_LOG_SCHEMA  # noqa: E402
from crawl_assets.crawler.settings import CrawlSettings  # noqa: E402
from crawl_assets.crawler.vocabulary import StatusClass  # noqa: E402
from crawl_assets.pipeline.change_stats.change_stats_step import change_stats  # noqa: E402
from crawl_assets.pipeline.change_stats.url_change_state import register_change_stats  # noqa: E402
from crawl_assets.pipeline.priorities.priorities_step import recrawl_priorities  # noqa: E402
from crawl_assets.pipeline.priorities.refresh_allocation import allocate  # noqa: E402
from crawl_assets.storage.shared_root import connect  # noqa: E402
from bench.bursty_web import build_bursty  # noqa: E402
from bench.cold_start import ColdCrawl, day_path, with_site_graph  # noqa: E402
from bench.simulated_pages import ListedPages, Pages, Start  # noqa: E402

EPOCH = datetime(2026, 1, 1, tzinfo=timezone.utc)
WARM_UP_DAYS = 30
COLD_FROM_DAY = 5  # a cold start is measured from day 5 on: learning the web is part of the score
COVERED = 0.99  # days_to_cover: the first day by which this share of the first day's pages was fetched
SLOW_DELAY_S = 3600.0
NUTCH_GROW, NUTCH_SHRINK, NUTCH_MIN, NUTCH_MAX = 1.4, 0.8, 1.0, 90.0
SPEARMAN_DAYS = (2, 7)  # and the last day


@dataclass(frozen=True)
class Web:
    rate: np.ndarray  # true changes a day
    weight: np.ndarray  # importance 1 + in-links
    inlinks: np.ndarray
    host: np.ndarray  # host index
    host_cap: np.ndarray  # fetches a day per host
    host_delay: np.ndarray
    honest_lm: np.ndarray  # per host: Last-Modified and ETag follow the content
    lying_lm: np.ndarray  # per host: Last-Modified is always the fetch time
    churn: np.ndarray  # per host: a counter changes on every view
    urls: list[str]
    hosts: list[str]
    bursty: object = None  # bursty_web.BurstyWeb: the listed changes of the bursty scenario


def build_web(n: int, n_hosts: int, rng: np.random.Generator, host_budget: int) -> Web:
    kind = rng.choice(5, size=n, p=[0.35, 0.35, 0.20, 0.08, 0.02])
    lo = np.array([0, 1 / 180, 1 / 30, 1 / 3, 2.0])[kind]
    hi = np.array([0, 1 / 30, 1 / 3, 2.0, 10.0])[kind]
    rate = np.where(kind == 0, 0.0, np.exp(rng.uniform(np.log(np.maximum(lo, 1e-9)), np.log(np.maximum(hi, 1e-9)))))
    inlinks = np.minimum(rng.zipf(1.8, size=n) - 1, 100_000)
    host = rng.integers(0, n_hosts, size=n)
    delay = np.where(rng.random(n_hosts) < 0.05, SLOW_DELAY_S, 1.0)
    cap = np.minimum(host_budget, np.floor(86_400 / delay))
    kind_of_host = rng.choice(3, size=n_hosts, p=[0.4, 0.3, 0.3])
    hosts = [f"h{h:04d}.bench.test" for h in range(n_hosts)]
    urls = [f"https://{hosts[h]}/p/{i}" for i, h in enumerate(host)]
    return Web(rate=rate, weight=1.0 + inlinks, inlinks=inlinks, host=host, host_cap=cap, host_delay=delay,
               honest_lm=kind_of_host == 0, lying_lm=kind_of_host == 2, churn=rng.random(n_hosts) < 0.3,
               urls=urls, hosts=hosts)


def spearman(estimated: np.ndarray, truth: np.ndarray) -> float:
    """Spearman's rank correlation (ties take their mean rank) over the pages with an estimate."""
    known = ~np.isnan(estimated)
    a, b = _ranks(estimated[known]), _ranks(truth[known])
    a, b = a - a.mean(), b - b.mean()
    return float((a * b).sum() / np.sqrt((a * a).sum() * (b * b).sum()))


def _ranks(values: np.ndarray) -> np.ndarray:
    _, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    ends = np.cumsum(counts)
    return ((ends - (counts - 1) / 2.0))[inverse]


def select(score: np.ndarray, web: Web, budget: int, eligible: np.ndarray) -> np.ndarray:
    """The `budget` highest scores, at most host_cap per host (ties by page index)."""
    idx = np.flatnonzero(eligible)
    order = idx[np.lexsort((idx, -score[idx], web.host[idx]))]
    hosts = web.host[order]
    start = np.flatnonzero(np.r_[True, hosts[1:] != hosts[:-1]])
    rank = np.arange(len(order)) - np.repeat(start, np.diff(np.r_[start, len(order)]))
    kept = order[rank < web.host_cap[hosts]]
    best = kept[np.lexsort((kept, -score[kept]))][:budget]
    return np.sort(best)


def since_fetched(day, pages) -> np.ndarray:
    """Days since each page's last fetch; a page never fetched (appeared during a cold-start
    run) is as overdue as a page can be."""
    return np.where(pages.has_copy, day - np.nan_to_num(pages.fetched), 1e9)


def existing(day, pages) -> np.ndarray:
    return np.ones(len(pages.fetched), bool) if pages.start is None else pages.start.born <= day


class FrequencyPolicy:
    """Fetch the pages most overdue relative to a fixed frequency."""

    def __init__(self, frequency):
        self.frequency = frequency

    def choose(self, day, pages, budget):
        return select(since_fetched(day, pages) * self.frequency, pages.web, budget,
                      (self.frequency > 0) & existing(day, pages))

    def observe(self, day, idx, when, changed, pages):
        pass


class NutchAdaptive:
    def __init__(self, n, start_interval):
        self.interval = np.full(n, start_interval)

    def choose(self, day, pages, budget):
        return select(since_fetched(day, pages) / self.interval, pages.web, budget, existing(day, pages))

    def observe(self, day, idx, when, changed, pages):
        grown = np.where(changed, self.interval[idx] * NUTCH_SHRINK, self.interval[idx] * NUTCH_GROW)
        self.interval[idx] = np.clip(grown, NUTCH_MIN, NUTCH_MAX)


class Adaptive:
    """Ours: the project's change_stats and recrawl_priorities over the fetch-log Parquet."""

    def __init__(self, web: Web, log_dir: Path, settings: CrawlSettings):
        self.web, self.log_dir, self.settings = web, log_dir, settings
        self.index = {u: i for i, u in enumerate(web.urls)}
        # The sitemaps (bursty web) are listings whose dates are honest: read first each day,
        # within settings.listing_reserve_share of the budget, as change_evidence.weigh_listings marks them.
        listing = np.zeros(len(web.urls), bool)
        if web.bursty is not None:
            listing[web.bursty.sitemap_of_host[web.bursty.sitemap_of_host >= 0]] = True
        self.known = self.all_known = pa.table({"url": web.urls, "host": [web.hosts[h] for h in web.host],
                                                "listing": listing})
        self.inlinks = pa.table({"url": web.urls, "inlinks": web.inlinks})
        self.hosts = pa.table({"host": web.hosts, "delay_s": web.host_delay,
                               "flagged": np.zeros(len(web.hosts), bool)})
        self.plan = None
        self.previous = None  # change_stats of the day before
        self.seconds = 0.0
        self.spearman_days: tuple[int, ...] = ()
        self.spearman: dict[int, float] = {}  # day -> Spearman of change_rate with the true rate
        self.on_prior: dict[int, float] = {}  # day -> share of the URLs still on their pool's prior
        self.prior_share: dict[int, float] = {}  # day -> change_stats' urls_on_prior_share (its URLs only)
        self.lastmods: set[tuple[str, float]] = set()  # every (url, lastmod) a fetched sitemap listed
        self.host_events = [0, 0]  # change_stats' host events: detected, and true (bursty web: a rebuild
        # or a release of the host inside the event's window)
        self.host_number = {h: i for i, h in enumerate(web.hosts)}

    def choose(self, day, pages, budget):
        return self.plan

    def observe(self, day, idx, when, changed, pages):
        write_fetch_log(self.log_dir, day, idx, when, changed, pages)
        t0 = time.perf_counter()
        date = (EPOCH + timedelta(days=day)).date()
        # The daily step, as the change_stats asset runs it: the day's fetches folded into the
        # day before's statistics (the first day: built from its fetches alone).
        # Its state files go under log_dir/change_stats/date=D/ (url_change_state.py).
        self.lastmods.update(pages.lastmod_evidence(idx, when))
        stats = change_stats(str(self.log_dir / f"date={date}" / "*" / "*.parquet"), date, self.settings,
                             lastmod_evidence=self._evidence(), previous=self.previous, state_root=self.log_dir)
        self.previous = stats.state
        self._count_host_events(stats.host_events)
        self.seconds += time.perf_counter() - t0
        if day in self.spearman_days:
            rate, on_prior = self.estimated_rates(stats.state)
            self.spearman[day], self.on_prior[day] = spearman(rate, self.web.rate), float(on_prior.mean())
            self.prior_share[day] = stats.counts.on_prior_share
        self._plan(stats.state, date)
        self.last_counts = (stats.counts, self.last_plan)

    def _count_host_events(self, events: pa.Table | None) -> None:
        if events is None:
            return
        day = events.filter(events["day_event"]).to_pylist()
        self.host_events[0] += len(day)
        if self.web.bursty is None:
            return
        for e in day:
            times = self.web.bursty.host_event_times.get(self.host_number[e["host"]], np.zeros(0))
            after, before = ((e[k] - EPOCH).total_seconds() / 86_400 for k in ("last_event_after", "last_event_before"))
            self.host_events[1] += bool(((times > after) & (times <= before)).any())

    def _evidence(self) -> pa.Table | None:
        """The sitemap dates seen so far, one row per (url, lastmod), as the change_stats
        asset reads them (change_evidence.trusted_change_evidence); None without sitemaps."""
        if not self.lastmods:
            return None
        urls, days = zip(*self.lastmods)
        micros = np.round((EPOCH.timestamp() + np.asarray(days) * 86_400) * 1e6).astype(np.int64)
        return pa.table({"url": list(urls), "lastmod": pa.array(micros, pa.timestamp("us", tz="UTC"))})

    def estimated_rates(self, state) -> tuple[np.ndarray, np.ndarray]:
        """change_stats' change_rate of every page (NaN for a page it does not list), and
        whether it is on its pool's prior (a page it does not list is)."""
        con = connect()
        try:
            register_change_stats(con, state)
            got = con.execute("SELECT url, change_rate, on_prior FROM change_stats").fetchnumpy()
        finally:
            con.close()
        rate, on_prior = np.full(len(self.web.urls), np.nan), np.ones(len(self.web.urls), bool)
        rows = np.fromiter((self.index[u] for u in got["url"]), np.int64, len(got["url"]))
        rate[rows], on_prior[rows] = got["change_rate"], got["on_prior"]
        return rate, on_prior

    def _plan(self, rates, date) -> None:
        t0 = time.perf_counter()
        plan = recrawl_priorities(rates, self.inlinks, self.hosts, self.known, date + timedelta(days=1),
                                  self.settings)
        planned = plan.urls.filter(plan.urls["planned"])["url"].to_pylist()
        self.seconds += time.perf_counter() - t0
        self.last_planned = planned
        self.plan = np.sort(np.fromiter((self.index[u] for u in planned), dtype=np.int64, count=len(planned)))
        self.last_plan = plan.counts


class OptimalTrueRates(Adaptive):
    """The ceiling: the same recrawl_priorities (allocation and daily plan) fed the TRUE
    rates and the true last fetch times instead of change_stats' estimates. In a cold-start
    run it knows every page from the day it appears (a page never fetched is a discovery)."""

    def observe(self, day, idx, when, changed, pages):
        there = np.flatnonzero(existing(day + 1, pages))
        held = pages.has_copy[there]
        visited = pa.array([EPOCH + timedelta(days=float(t)) if h else None
                            for t, h in zip(pages.fetched[there], held)], pa.timestamp("us", tz="UTC"))
        n = len(there)
        if len(there) < len(self.web.urls):
            self.known = self.known.take(there)
        truth = pa.table({
            "url": self.known["url"], "host": self.known["host"], "change_rate": self.web.rate[there],
            "last_visit_at": visited, "last_fetched_at": visited,
            "last_status": pa.array(np.full(n, 200, np.int32), mask=~held),
            "last_status_class": pa.array([StatusClass.OK.value if h else None for h in held], pa.string()),
            "gone_streak": np.zeros(n, np.int64),
            "pending_change": np.zeros(n, bool)})
        self._plan(truth, (EPOCH + timedelta(days=day)).date())
        self.known = self.all_known


class ColdAdaptive(Adaptive):
    """Ours from a cold start (cold_start.py): one home page and sitemap per host known."""

    def __init__(self, web: Web, log_dir: Path, settings: CrawlSettings, graph, sitemaps_dated: bool):
        super().__init__(web, log_dir, settings)
        self.crawl = ColdCrawl(web, graph, log_dir, settings, sitemaps_dated)
        self.index = self.crawl.url_page  # every URL written so far (aliases too) -> its page
        self.template_host = graph.template_host
        self.demoted = frozenset()
        self.flags = {"near_duplicates": 0, "trap": 0}

    def first_day(self, rng, budget, pages):
        when = np.sort(rng.uniform(0, 0.5, budget))
        fetched = self.crawl.first_day(budget, when)
        return self._distinct(fetched, when[:len(fetched)])

    @staticmethod
    def _distinct(fetched, when):
        first, at = np.unique(fetched, return_index=True)  # (a page fetched under two URLs: its first)
        return first, when[at]

    def choose(self, day, pages, budget):
        assert len(self.planned_urls) <= budget
        return self.crawl.plan_day(self.planned_urls, self.demoted)

    def observe(self, day, idx, when, changed, pages):
        t0 = time.perf_counter()
        date = (EPOCH + timedelta(days=day)).date()
        page_when = dict(zip(idx.tolist(), when.tolist()))
        crawl = self.crawl
        crawl.close_links(page_when)
        crawl.write_batch(date.isoformat())
        urls, row_pages, unchanged = crawl.versions_for_log(pages.version)
        log = day_path(self.log_dir, "fetch_log", date.isoformat(), "fetch_log.parquet")
        write_fetch_log(self.log_dir, day, row_pages, np.array([page_when[p] for p in row_pages.tolist()]), None,
                        pages, urls=urls, unchanged=unchanged, path=log, template_host=self.template_host)
        self.lastmods.update(pages.lastmod_evidence(idx, when))
        stats = change_stats([str(log)], date, self.settings, lastmod_evidence=self._evidence(),
                             previous=self.previous, state_root=self.log_dir)
        self.previous = stats.state
        self._count_host_events(stats.host_events)
        if day in self.spearman_days:
            rate, on_prior = self.estimated_rates(stats.state)
            self.spearman[day], self.on_prior[day] = spearman(rate, self.web.rate), float(on_prior.mean())
            self.prior_share[day] = stats.counts.on_prior_share
        known, self.demoted, traps = crawl.close_day(date.isoformat())
        self.flags = {"near_duplicates": len(self.demoted - traps), "trap": len(traps)}
        flagged = self.demoted | traps
        self.hosts = pa.table({"host": self.web.hosts, "delay_s": self.web.host_delay,
                               "flagged": [h in flagged for h in self.web.hosts]})
        self.known, self.inlinks = known, None
        self.seconds += time.perf_counter() - t0
        self._plan(stats.state, date)
        self.planned_urls = self.last_planned
        if os.environ.get("FRESHNESS_DAYS"):  # (a line a day, to watch a cold start learn)
            c = self.last_plan
            print(f"    day {day}: plan {c.planned} = {c.refresh_planned} refresh + {c.discovery_planned} new + "
                  f"{c.gone_planned} gone; {stats.counts.urls} URLs with statistics", flush=True)
        self.last_counts = (stats.counts, self.last_plan)


def write_fetch_log(log_dir: Path, day: int, idx, when, changed, pages: Pages, urls: list[str] | None = None,
                    unchanged=None, path: Path | None = None, template_host=None) -> None:
    """The day's fetches as the crawl's fetch log: 304 when an honest host saw no change.
    Cold start (one row per URL fetched, idx its page): `urls` the URLs, `unchanged` whether
    the page is as the URL's last fetch found it, `path` the file, `template_host` per host
    whether its pages' main text is the host's template (their SimHash is the host's, give or
    take a bit: near-duplicates by the main text alone)."""
    web = pages.web
    host = web.host[idx]
    honest, lying, churn = web.honest_lm[host], web.lying_lm[host], web.churn[host]
    if unchanged is None:
        not_modified = honest & ~changed & (pages.views[idx] > 1)
    else:
        not_modified = honest & unchanged
    version, views = pages.version[idx], pages.views[idx]
    # SimHash: a base per page and version of its text (a real change moves many bits), a
    # template bit that flips with each change of the bytes alone (boilerplate: one bit), and
    # a counter on churning hosts that moves at most two bits between views.
    text_version = pages.text_version[idx]
    base = (np.asarray(idx, np.uint64) * np.uint64(0x9E3779B97F4A7C15)
            ^ (text_version.astype(np.uint64) * np.uint64(0xC2B2AE3D27D4EB4F)))
    if template_host is not None:
        listing = template_host[host]
        host_print = (host.astype(np.uint64) + np.uint64(1)) * np.uint64(0xD6E8FEB86659FD93)
        own_bit = np.uint64(1) << (np.asarray(idx, np.uint64) % np.uint64(61))
        base = np.where(listing, host_print ^ own_bit, base)
    template = ((version - text_version) % 2).astype(np.uint64) << np.uint64(63)
    counter = np.where(churn, np.uint64(1) << (views % 63).astype(np.uint64), np.uint64(0))
    simhash = base ^ template ^ counter
    fetched_at = [EPOCH + timedelta(days=float(t)) for t in when]
    last_change = pages.last_change[idx]
    rows = {
        "url": urls if urls is not None else [web.urls[i] for i in idx],
        "host": [web.hosts[h] for h in host],
        "status": np.where(not_modified, 304, 200).astype(np.int32),
        "status_class": np.where(not_modified, StatusClass.NOT_MODIFIED.value, StatusClass.OK.value),
        "fetched_at": fetched_at,
        "bytes": np.where(not_modified, 0, 20_000),
        "sha256": [None if nm else (f"{i}:{v}:{c}" if ch else f"{i}:{v}")
                   for i, v, c, ch, nm in zip(idx, version, views, churn, not_modified)],
        # the payload less its per-view counter (the counter stands for a per-request token:
        # crawler/content/volatile_parts.py): byte-level, as freshness is scored
        "change_digest": [None if nm else f"{i}:{v}" for i, v, nm in zip(idx, version, not_modified)],
        "simhash": pa.array(simhash, mask=not_modified),
        "etag": [f'"{i}-{v}"' if h else None for i, v, h in zip(idx, version, honest)],
        "last_modified": [format_datetime(EPOCH + timedelta(days=float(lc)), usegmt=True) if h
                          else format_datetime(t, usegmt=True) if ly else None
                          for lc, t, h, ly in zip(last_change, fetched_at, honest, lying)],
    }
    table = pa.table({name: rows.get(name, pa.nulls(len(idx), FETCH_LOG_SCHEMA.field(name).type))
                      for name in FETCH_LOG_SCHEMA.names}, schema=FETCH_LOG_SCHEMA)
    if path is None:
        out = log_dir / f"date={(EPOCH + timedelta(days=day)).date()}" / "shard=s00"
        out.mkdir(parents=True, exist_ok=True)
        path = out / "fetch_log.parquet"
    pq.write_table(table, path)


@dataclass(frozen=True)
class Run:
    freshness: float  # weighted, averaged over the measured days
    age: float
    never_changing_share: float  # of the last day's fetches
    first_fetched: np.ndarray  # per page: the day it was first fetched (inf: never)


def simulate(name, policy, web, days, budget, seed, born_on_day_0=False, cold=None) -> Run:
    """Run one policy: its mean weighted freshness and age over the measured days (from
    WARM_UP_DAYS + 1, or COLD_FROM_DAY in a cold start), the share of the last day's fetches
    spent on pages that never change, and the day each page was first fetched.
    cold: a ColdStartWeb; the policy then holds a copy of every page that exists on day 0
    (a baseline) or of none (ours: its first_day follows links from the home pages)."""
    # The same seed for every policy: statistically the same web (the draws diverge once the
    # policies fetch different pages, the rates and importance do not).
    rng = np.random.default_rng(seed)
    n = len(web.rate)
    first = rng.uniform(0, 0.5, n)
    from_cold = cold is not None and hasattr(policy, "first_day")
    start = None if cold is None else Start(cold.born, has_copy=(cold.born <= 0) & (not from_cold),
                                            events=cold.events if web.bursty is None else None,
                                            event_rate=cold.event_rate if web.bursty is None else None)
    pages = Pages(web, rng, first, born_on_day_0, start) if web.bursty is None else \
        ListedPages(web, web.bursty, first, start)
    first_fetched = np.where(pages.has_copy, 0.0, np.inf)
    if from_cold:  # day 0: ours follows links from the home pages within the budget
        idx, when = policy.first_day(rng, budget, pages)
        pages.day_measures(0, idx, when)
        changed = pages.fetch()
        first_fetched[idx] = 0
    else:  # day 0: every page there fetched once
        idx = np.flatnonzero(pages.has_copy)
        when, changed = first[idx], np.zeros(len(idx), bool)
        pages.views[idx] = 1
    policy.observe(0, idx, when, changed, pages)
    fresh, age = [], []
    measured_from = WARM_UP_DAYS + 1 if cold is None else COLD_FROM_DAY
    for day in range(1, days + 1):
        idx = policy.choose(day, pages, budget)
        assert len(idx) <= budget
        assert (np.bincount(web.host[idx], minlength=len(web.host_cap)) <= web.host_cap).all()
        when = day + rng.uniform(0, 0.5, len(idx))
        f, a = pages.day_measures(day, idx, when)
        changed = pages.fetch()
        first_fetched[idx] = np.minimum(first_fetched[idx], day)
        policy.observe(day, idx, when, changed, pages)
        if day >= measured_from:
            fresh.append(f)
            age.append(a)
    never = float(np.mean(web.rate[idx] == 0)) if len(idx) else 0.0
    print(f"  {name:15s} freshness {np.mean(fresh):.4f}  age {np.mean(age):6.3f} days  "
          f"last day: {len(idx)} fetches, {never:.3f} on never-changing pages", flush=True)
    return Run(float(np.mean(fresh)), float(np.mean(age)), never, first_fetched)


def proportional_frequency(rate, budget):
    """f ∝ λ with Σ f = budget and f <= 1 (pages at the cap hand their excess to the rest)."""
    f = np.zeros(len(rate))
    free = rate > 0
    left = float(budget)
    while True:
        f[free] = rate[free] * left / rate[free].sum()
        over = free & (f > 1)
        if not over.any():
            return f
        f[over] = 1.0
        free &= ~over
        left = budget - (~free & (rate > 0)).sum()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--urls", type=int, default=100_000)
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--days", type=int, default=90)
    parser.add_argument("--budget-share", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--first-day-last-modified", action="store_true",
                        help="every page's history starts on the crawl's first day (its first Last-Modified "
                             "is that day's start or a later change)")
    parser.add_argument("--keep", type=Path, help="write the adaptive policy's fetch log here and keep it")
    parser.add_argument("--scenario", choices=("poisson", "bursty"), default="poisson",
                        help="poisson: every page its own Poisson process; bursty: hosts whose pages change "
                             "together (bursty_web.py)")
    parser.add_argument("--cold-start", action="store_true",
                        help="ours starts from one home page (and sitemap) per host and learns the rest "
                             "through links (site_graph.py, cold_start.py); the baselines start from a full copy")
    args = parser.parse_args()
    load_at_start = os.getloadavg()
    from bench.measures import load_line
    if args.days <= WARM_UP_DAYS:
        parser.error(f"--days must exceed the {WARM_UP_DAYS}-day warm-up")
    if args.scenario == "bursty" and args.first_day_last_modified:
        parser.error("--first-day-last-modified is a case of the poisson scenario")
    if args.cold_start and args.first_day_last_modified:
        parser.error("--first-day-last-modified is a case of the warm start")
    settings = replace(CrawlSettings(), daily_fetch_budget=int(args.budget_share * args.urls))
    budget = settings.daily_fetch_budget
    rng = np.random.default_rng(args.seed)
    if args.scenario == "bursty":
        fields, listed = build_bursty(args.urls, args.hosts, rng, settings.max_pages_per_host, args.days, SLOW_DELAY_S)
        web = Web(**fields, bursty=listed)
    else:
        web = build_web(args.urls, args.hosts, rng, settings.max_pages_per_host)
    cold = None
    if args.cold_start:
        web, cold = with_site_graph(web, rng, args.days)
    n = len(web.urls)
    print(f"web: {n} URLs on {args.hosts} hosts, {args.days} days, budget {budget} a day; "
          f"mean rate {web.rate.mean():.3f}/day, {np.mean(web.rate == 0):.0%} never change, "
          f"{(web.host_cap < settings.max_pages_per_host).sum()} hosts capped at "
          f"{int(86_400 / SLOW_DELAY_S)} a day"
          + ("; every page born on day 0" if args.first_day_last_modified else ""))
    if web.bursty is not None:
        print(f"bursty: pages {web.bursty.kinds}; boilerplate-only share of the changes in the crawl's days "
              f"{web.bursty.boilerplate_share:.2f}")
    if cold is not None:
        g = cold.graph
        print(f"cold start: {int((g.home >= 0).sum())} home pages, {int((g.sitemap_of_host >= 0).sum())} sitemaps; "
              f"depth median {np.median(g.depth):.0f}, max {g.depth.max()}; {len(g.out_target)} links; "
              f"{int(g.template_host.sum())} template listing hosts, {int((g.alias_kind > 0).sum())} alias hosts; "
              f"{int((cold.born > 0).sum())} pages appear during the run")
    born = args.first_day_last_modified
    optimal_f = allocate(web.rate, web.weight, web.host, web.host_cap, budget).frequency
    results = {}
    policies = {
        "uniform": lambda: FrequencyPolicy(np.full(n, budget / n)),
        "proportional": lambda: FrequencyPolicy(proportional_frequency(web.rate, budget)),
        "nutch_adaptive": lambda: NutchAdaptive(n, n / budget),
        "optimal_periodic": lambda: FrequencyPolicy(optimal_f),
    }
    started = time.perf_counter()
    for name, make in policies.items():
        results[name] = simulate(name, make(), web, args.days, budget, args.seed + 1, born, cold)
    log_dir = args.keep or Path(tempfile.mkdtemp(prefix="freshness-bench-"))
    try:
        results["optimal"] = simulate("optimal", OptimalTrueRates(web, log_dir / "optimal", settings), web,
                                      args.days, budget, args.seed + 1, born, cold)
        if cold is None:
            ours = Adaptive(web, log_dir, settings)
        else:
            ours = ColdAdaptive(web, log_dir, settings, cold.graph, sitemaps_dated=web.bursty is not None)
        ours.spearman_days = (*SPEARMAN_DAYS, args.days)
        results["adaptive"] = simulate("adaptive", ours, web, args.days, budget, args.seed + 1, born, cold)
        stats, plan = ours.last_counts
        print(f"  adaptive: change_stats + recrawl_priorities {ours.seconds:.1f} s over {args.days + 1} days; "
              f"last day: {stats.visits} visits, {stats.changes} changes, {stats.boilerplate_changes} "
              f"boilerplate-only, 304 share {stats.not_modified_share:.2f}, {stats.lm_trusted_hosts} hosts "
              f"with trusted Last-Modified; {plan.capped_hosts} hosts at their cap")
        print(f"  adaptive: {ours.host_events[0]} host events detected"
              + (f", {ours.host_events[1]} of them a rebuild or release of the host" if web.bursty else ""))
        print("  adaptive: Spearman of estimated with true rates over every URL: "
              + ", ".join(f"day {d} {ours.spearman[d]:.3f} ({ours.on_prior[d]:.0%} on the prior)"
                          for d in ours.spearman_days))
        print("  adaptive: change_stats' urls_on_prior_share (of the URLs it lists): "
              + ", ".join(f"day {d} {ours.prior_share[d]:.3f}" for d in ours.spearman_days))
        if cold is not None:
            crawl = ours.crawl
            print(f"  adaptive: {crawl.url_fetches} URL fetches for {crawl.page_fetches} page fetches "
                  f"({crawl.url_fetches - crawl.page_fetches} spent on a second URL of a page fetched that day); "
                  f"last day's flagged hosts: {ours.flags}")
    finally:
        if args.keep is None:
            shutil.rmtree(log_dir, ignore_errors=True)
    print(f"total {time.perf_counter() - started:.0f} s")
    fresh = {k: v.freshness for k, v in results.items()}
    gap = (fresh["adaptive"] - fresh["uniform"]) / (fresh["optimal"] - fresh["uniform"])
    print(f"age (days, weighted): " + " ".join(f"{k}={v.age:.3f}" for k, v in results.items()))
    coverage = ""
    if cold is not None:
        coverage = cover_keys(results["adaptive"].first_fetched, cold.born, args.days)
        print(f"  adaptive: {coverage_line(results['adaptive'].first_fetched, cold.born)}; "
              f"{missing_weight(results['adaptive'].first_fetched, cold.born, web.weight, args.days):.4f} of the "
              f"importance there not yet fetched, over days {COLD_FROM_DAY}..{args.days}")
        print(f"  adaptive: {late_pages(results['adaptive'].first_fetched, cold, web, budget)}")
    print(load_line(load_at_start))
    scenario = "" if args.scenario == "poisson" else f"scenario={args.scenario} "
    print(f"freshness {scenario}urls={n} budget_per_day={budget} days={args.days} adaptive={fresh['adaptive']:.4f} "
          f"uniform={fresh['uniform']:.4f} proportional={fresh['proportional']:.4f} "
          f"nutch_adaptive={fresh['nutch_adaptive']:.4f} optimal={fresh['optimal']:.4f} gap_closed={gap:.3f} "
          f"rate_spearman_d2={ours.spearman[SPEARMAN_DAYS[0]]:.3f} "
          f"rate_spearman_d7={ours.spearman[SPEARMAN_DAYS[1]]:.3f} "
          f"rate_spearman_end={ours.spearman[args.days]:.3f} "
          f"never_changing_share={results['adaptive'].never_changing_share:.3f} "
          f"on_prior_share_d2={ours.prior_share[SPEARMAN_DAYS[0]]:.3f} "
          f"on_prior_share_d7={ours.prior_share[SPEARMAN_DAYS[1]]:.3f} "
          f"on_prior_share_end={ours.prior_share[args.days]:.3f}"
          + (" first_day_lm=1" if born else "") + coverage)
    return 0


def cover_keys(first_fetched: np.ndarray, born: np.ndarray, days: int) -> str:
    """ cold_start=1 coverage_d7= days_to_cover=: the share of the pages there by day 7 that
    were fetched by then, and the first day by which COVERED of the pages there on day 0
    (every one reachable from a home page) had been fetched once (nan: not within the run)."""
    there = born <= 7
    coverage_d7 = float(np.mean(first_fetched[there] <= 7))
    initial = np.sort(first_fetched[born <= 0])
    day = initial[int(np.ceil(COVERED * len(initial))) - 1]
    return f" cold_start=1 coverage_d7={coverage_d7:.3f} days_to_cover={day:.0f}" if np.isfinite(day) else \
        f" cold_start=1 coverage_d7={coverage_d7:.3f} days_to_cover=nan"


def late_pages(first_fetched: np.ndarray, cold, web: Web, budget: int) -> str:
    """Which pages there on day 0 were not fetched by day ceil(pages / budget) + 3 (the goal)."""
    goal = int(np.ceil(len(web.rate) / budget)) + 3
    late = (cold.born <= 0) & (first_fetched > goal)
    g = cold.graph
    kinds = {"on slow hosts": web.host_cap[web.host] < 100, "on template hosts": g.template_host[web.host],
             "on alias hosts": g.alias_kind[web.host] > 0, "deeper than 6": g.depth > 6}
    return (f"{int(late.sum())} pages there on day 0 not fetched by day {goal}: "
            + ", ".join(f"{int((late & m).sum())} {name}" for name, m in kinds.items()))


def missing_weight(first_fetched: np.ndarray, born: np.ndarray, weight: np.ndarray, days: int) -> float:
    """The importance-weighted share of the pages there that had no copy yet (first fetched
    after the day began), averaged over days COLD_FROM_DAY..days: freshness a cold start
    cannot have, whatever it knows of the rates (the baselines start with every copy)."""
    shares = []
    for day in range(COLD_FROM_DAY, days + 1):
        there = born <= day
        shares.append(float(weight[there & (first_fetched >= day)].sum() / weight[there].sum()))
    return float(np.mean(shares))


def coverage_line(first_fetched: np.ndarray, born: np.ndarray) -> str:
    """How soon pages were first fetched: the first day's, and those that appeared during the run."""
    initial = first_fetched[born <= 0]
    new = born > 0
    wait = first_fetched[new] - born[new]
    return (f"pages there on day 0 fetched by day 1, 3, 7, 14: "
            + ", ".join(f"{np.mean(initial <= d):.1%}" for d in (1, 3, 7, 14))
            + f"; {int(new.sum())} pages that appeared: median {np.median(wait):.0f} days to the first fetch, "
              f"{np.mean(np.isinf(wait)):.1%} never fetched")


if __name__ == "__main__":
    sys.exit(main())
