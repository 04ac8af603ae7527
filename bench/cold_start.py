"""freshness.py --cold-start: ours learning the web from one home page per host.

The crawler starts knowing each host's home page and sitemap (a robots.txt's Sitemap line) and
nothing else; every other page it learns from the links of the pages it fetched
(site_graph.py). Each day the simulator writes what the crawl's fetch batch would have written,
under a data root laid out as the crawl's (storage/layout.py): the fetch log, and the links and
dropped-URL tables with the trap defences' verdicts on every link (crawler/url_policy/
trap_defences.py, the hosts demoted the day before included; a sitemap's list does not count
towards its host's growth cap, as admission.links_found's `listed`) after folding it by the URL
aliases learnt (url_policy/url_aliases.py). It then runs the project's steps as the day's
close does: change_stats, the SimHash index and near-duplicate clusters (host quality: a
demoted host's links are refused and it gets flagged_host_budget fetches a day), the URL
aliases (pipeline/alias_rules/alias_learning.py), the known URLs (pipeline/recrawl_inputs.known_urls),
the trap flags, and recrawl_priorities for the next day. The first day follows links within the day's budget as
the fetch batch does without a plan: links are admitted as they are found (while the batch
holds fewer than the budget, each host within its cap and max_depth), fetched shallowest first,
the hosts in turn.

Not simulated: the frontier step's own cuts of a plan (a host's URLs of one query shape beyond
max_urls_per_pattern), robots.txt, politeness within the day (a host's cap stands for it).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from crawl_assets.crawler.batches.arrow_schemas import LINKS_SCHEMA, dropped_table
from crawl_assets.crawler.url_policy.depth_limit import too_deep
from crawl_assets.crawler.url_policy.trap_defences import Blocklist, TrapDefences, TrapLimits
from crawl_assets.crawler.vocabulary import BATCH_LIMITS, DropReason
from crawl_assets.pipeline.crawl_history import CrawlHistory
from crawl_assets.pipeline.dedup_step import build_clusters, build_simhash_index, dedup_inputs, links_inputs
from crawl_assets.pipeline.fetch_step import demoted_hosts
from crawl_assets.pipeline.recrawl_inputs import known_urls, trap_hosts
from crawl_assets.crawler.url_policy.url_aliases import AliasRules
from crawl_assets.pipeline.alias_rules.alias_learning import learn_url_aliases, previous_aliases
from crawl_assets.storage.layout import seeds_file, shard_files, url_aliases_file, write_parquet_atomic

from bench.bursty_web import Changes
from bench.site_graph import SITEMAP_HOST_SHARE, SiteGraph, build_site_graph, outlinks

SHARD = "s00"


def day_path(root: Path, table: str, day_name: str, file: str) -> Path:
    path = root / table / f"date={day_name}" / f"shard={SHARD}" / file
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


class Batch:
    """One day's fetch batch as far as links go: each link's verdict (the trap defences, the
    batch's own limits when it follows links), the links and dropped-URL rows."""

    def __init__(self, settings, demoted: frozenset[str], seen: set[str], follow: bool, budget: int,
                 host_cap: np.ndarray, hosts: list[str], aliases: AliasRules | None = None):
        self.traps = TrapDefences(TrapLimits.from_settings(settings), Blocklist(), demoted)
        self.aliases = aliases or AliasRules()
        self.settings, self.seen, self.follow, self.budget = settings, seen, follow, budget
        self.host_cap, self.hosts = host_cap, hosts
        self.decided: dict[str, str] = {}  # URL -> why it was refused
        self.queued: set[str] = set()
        self.admitted = np.zeros(len(host_cap), np.int64)
        self.rows: list[tuple] = []

    def admit(self, url: str, host: int, depth: int) -> bool:
        """Admission.admit_found's rules: the batch's budget, max_depth, the host's cap."""
        if url in self.queued or url in self.decided:
            return False
        reason = None
        if int(self.admitted.sum()) >= self.budget:
            reason = DropReason.DAY_BUDGET
        elif too_deep(depth, self.settings.max_depth):
            reason = DropReason.DEPTH
        elif self.admitted[host] >= self.host_cap[host]:
            reason = DropReason.HOST_BUDGET
        if reason is not None:
            self.decided[url] = reason
            self.traps.dropped[self.hosts[host]][reason] += 1
            return False
        self.admitted[host] += 1
        self.queued.add(url)
        return True

    def links(self, source_url: str, source_depth: int, targets: list[str], target_hosts: list[int],
              listed: bool = False) -> list:
        """Admission.links_found: each link reported with its verdict; those to admit returned.
        listed: the source is a sitemap (its list does not count towards the host's growth)."""
        admitted = []
        for target, h in zip(targets, target_hosts):
            host = self.hosts[h]
            target = self.aliases.fold(target, host)  # (the batch folds a link first)
            if target in self.queued or target in self.decided:
                reason = self.decided.get(target)
                self.rows.append((source_url, target, host, source_depth + 1, False,
                                  None if reason in BATCH_LIMITS else reason))
                continue
            is_new = target not in self.seen
            reason = self.traps.reason(target, host)
            if reason is not None:
                self.decided[target] = reason
            elif is_new and not listed:
                self.traps.observe_new_url(host, target)
            self.rows.append((source_url, target, host, source_depth + 1, is_new, reason))
            if reason is None and self.follow and self.admit(target, h, source_depth + 1):
                admitted.append((target, source_depth + 1))
        return admitted

    def write(self, root: Path, day_name: str) -> None:
        columns = list(zip(*self.rows)) if self.rows else [[] for _ in LINKS_SCHEMA]
        pq.write_table(pa.table(dict(zip(LINKS_SCHEMA.names, columns)), schema=LINKS_SCHEMA),
                       day_path(root, "links", day_name, "links.parquet"))
        pq.write_table(dropped_table(self.traps.dropped), day_path(root, "dropped_urls", day_name,
                                                                   "dropped_urls.parquet"))


class ColdCrawl:
    """What ours knows and writes in a cold start; freshness.ColdAdaptive drives it."""

    def __init__(self, web, graph: SiteGraph, root: Path, settings, sitemaps_dated: bool):
        self.web, self.graph, self.root, self.settings = web, graph, root, settings
        self.url_page: dict[str, int] = {u: i for i, u in enumerate(graph.urls)}
        self.url_version: dict[str, int] = {}  # each URL's page version at the URL's last fetch
        self.url_depth: dict[str, int] = {}
        self.seen: set[str] = set()  # every URL known before the day
        self.demoted: frozenset[str] = frozenset()
        self.aliases = AliasRules()  # learnt up to the day before
        sitemaps = graph.sitemap_of_host[graph.sitemap_of_host >= 0]
        # The bursty web's sitemaps date their pages: listings, as the warm run marks them.
        self.listings = {graph.urls[s] for s in sitemaps} if sitemaps_dated else set()
        self.seeds = np.concatenate([graph.home[graph.home >= 0], sitemaps])
        self.sitemap_pages = set(sitemaps.tolist())
        seeds = seeds_file(root)
        seeds.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"url": [graph.urls[s] for s in self.seeds],
                                 "host": [web.hosts[web.host[s]] for s in self.seeds]}), seeds)
        for s in self.seeds:
            self.seen.add(graph.urls[s])
            self.url_depth[graph.urls[s]] = 0
        self.today: tuple[list[str], np.ndarray] = ([], np.zeros(0, np.int64))  # URLs fetched and their pages
        self.batch: Batch | None = None
        self.url_fetches = 0
        self.page_fetches = 0

    def _targets(self, page: int, when: float) -> tuple[list[str], list[int]]:
        source, target, alias = outlinks(self.graph, np.array([page]), np.array([when]))
        urls = self.graph.alias_url(source, target, alias, self.web.hosts, self.web.host)
        for u, t in zip(urls, target.tolist()):
            self.url_page.setdefault(u, t)
        return urls, self.web.host[target].tolist()

    def first_day(self, budget: int, when: np.ndarray) -> np.ndarray:
        """The first day's fetches, shallowest first, the hosts in turn within a depth; returns
        their pages in fetch order (self.today holds the URLs). when: fetch times to hand out in order."""
        web = self.web
        batch = self.batch = Batch(self.settings, self.demoted, self.seen, True, budget,
                                   np.minimum(web.host_cap, self.settings.max_pages_per_host), web.hosts)
        level = []
        for s in self.seeds:
            url = self.graph.urls[s]
            if batch.admit(url, web.host[s], 0):
                level.append((url, 0))
        urls, pages = [], []
        while level:
            by_host = defaultdict(list)
            for url, depth in level:
                by_host[web.host[self.url_page[url]]].append((url, depth))
            turns = [entries for _, entries in sorted(by_host.items())]
            nxt = []
            for turn in range(max(len(entries) for entries in turns)):
                for entries in turns:
                    if turn < len(entries):
                        url, depth = entries[turn]
                        page = self.url_page[url]
                        self.url_depth.setdefault(url, depth)
                        targets, hosts = self._targets(page, when[min(len(urls), len(when) - 1)])
                        batch.traps.observe_fetch(web.hosts[web.host[page]])  # (as answer_records does)
                        urls.append(url)
                        pages.append(page)
                        nxt += batch.links(url, depth, targets, hosts, listed=page in self.sitemap_pages)
            level = nxt
        self.today = (urls, np.asarray(pages, np.int64))
        return self.today[1]

    def plan_day(self, planned_urls: list[str], demoted: frozenset[str]) -> np.ndarray:
        """A planned day: the plan's URLs (no links followed); returns the distinct pages."""
        self.batch = Batch(self.settings, demoted, self.seen, False, 0, self.web.host_cap, self.web.hosts,
                           self.aliases)
        pages = np.fromiter((self.url_page[u] for u in planned_urls), np.int64, len(planned_urls))
        self.today = (planned_urls, pages)
        return np.unique(pages)

    def close_links(self, page_when: dict[int, float]) -> None:
        """The links of the day's fetches (a planned day's; the first day's are in already)."""
        batch = self.batch
        if batch.follow:
            return
        for url, page in zip(*self.today):
            depth = self.url_depth.setdefault(url, int(self.graph.depth[page]))
            targets, hosts = self._targets(int(page), page_when[int(page)])
            # a page answered counts for its host's growth ratio before its links (answer_records.py)
            batch.traps.observe_fetch(self.web.hosts[self.web.host[page]])
            batch.links(url, depth, targets, hosts, listed=int(page) in self.sitemap_pages)

    def write_batch(self, day_name: str) -> None:
        self.batch.write(self.root, day_name)
        for source, target, _, depth, _, reason in self.batch.rows:
            self.seen.add(target)
            if target not in self.url_depth or depth < self.url_depth[target]:
                self.url_depth[target] = depth
        self.url_fetches += len(self.today[0])
        self.page_fetches += len(set(self.today[1].tolist()))

    def close_day(self, day_name: str) -> tuple[pa.Table, frozenset[str], frozenset[str]]:
        """The day's close: the known URLs (url, host, inlinks, listing), the hosts demoted for
        copying (host quality) and the trap hosts; the URL aliases learnt (the next day's batch
        folds by them)."""
        logs = dedup_inputs(self.root, day_name)
        index = build_simhash_index(self.settings, logs)
        quality = build_clusters(self.settings, index.fingerprints, index.pairs,
                                 links=links_inputs(self.root, day_name)).host_quality
        demoted = demoted_hosts(quality, self.settings)
        traps = trap_hosts(self.root, day_name, self.settings)
        aliases = learn_url_aliases([str(p) for p in logs], day_name, previous_aliases(self.root, day_name))
        write_parquet_atomic(aliases, url_aliases_file(self.root, day_name))
        self.aliases = AliasRules.from_table(aliases)
        history = CrawlHistory(seeds_file(self.root), shard_files(self.root, "links", through=day_name),
                               url_aliases=url_aliases_file(self.root, day_name))
        known = known_urls(history, self.settings)
        listing = pa.array([u in self.listings for u in known["url"].to_pylist()]) if self.listings else \
            pa.array(np.zeros(len(known), bool))
        return known.append_column("listing", listing), demoted, traps

    def versions_for_log(self, pages_version: np.ndarray) -> tuple[list[str], np.ndarray, np.ndarray]:
        """(urls, pages, not_modified) of the day's fetch-log rows: a URL fetched before whose
        page has not changed since answers 304 on an honest host (freshness.write_fetch_log)."""
        urls, pages = self.today
        version = pages_version[pages]
        again = np.array([self.url_version.get(u, -1) for u in urls], np.int64)
        for u, v in zip(urls, version.tolist()):
            self.url_version[u] = v
        return urls, pages, again == version


def dated(epoch, day: int) -> str:
    return (epoch + timedelta(days=day)).date().isoformat()


@dataclass(frozen=True)
class ColdStartWeb:
    graph: SiteGraph
    born: np.ndarray  # per page: the day it appears
    events: object  # bursty_web.Changes: listings and sitemaps changing as pages appear (Poisson web)
    event_rate: np.ndarray  # per page: those changes a day (in the web's true rate)


def with_site_graph(web, rng: np.random.Generator, days: int):
    """(web, ColdStartWeb): freshness.Web with its site graph: sitemap pages added on
    SITEMAP_HOST_SHARE of the hosts of a Poisson web (the bursty web has its own), its pages'
    URLs as the graph names them, template hosts without a per-view counter; the true rates of
    listings and sitemaps raised by the pages that appear on them."""
    n_hosts = len(web.hosts)
    if web.bursty is None:
        with_map = np.flatnonzero(rng.random(n_hosts) < SITEMAP_HOST_SHARE)
        n = len(web.rate)
        sitemap_of_host = np.full(n_hosts, -1, np.int64)
        sitemap_of_host[with_map] = n + np.arange(len(with_map))
        extra = len(with_map)
        web = replace(web, rate=np.r_[web.rate, np.zeros(extra)], weight=np.r_[web.weight, np.ones(extra)],
                      inlinks=np.r_[web.inlinks, np.zeros(extra, web.inlinks.dtype)],
                      host=np.r_[web.host, with_map], urls=web.urls + [""] * extra)
        frozen = np.zeros(n_hosts, bool)
    else:
        sitemap_of_host = web.bursty.sitemap_of_host
        frozen = np.bincount(web.host, weights=web.rate > 0, minlength=n_hosts) == 0
    graph = build_site_graph(web.host, web.inlinks, n_hosts, web.hosts, sitemap_of_host, frozen, days, rng)
    page, t = graph.page_events
    event_rate = np.bincount(page, minlength=len(web.rate)) / max(days, 1)
    rate = web.rate + event_rate
    churn = web.churn & ~graph.template_host
    web = replace(web, urls=graph.urls, rate=rate, churn=churn)
    events = None
    if web.bursty is not None:  # the bursty web's changes are listed in advance: add these
        n = len(web.rate)
        listed = web.bursty
        web = replace(web, bursty=replace(listed, changes=listed.changes.with_changes(page, t, n),
                                          text_changes=listed.text_changes.with_changes(page, t, n)))
    else:
        events = Changes(page, t, len(web.rate))
    return web, ColdStartWeb(graph, graph.born, events, event_rate)
