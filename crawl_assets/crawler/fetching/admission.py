"""Which URLs join this batch, and the link rows the batch reports.

A URL is queued once: not if it is queued or refused already, deeper than max_depth, or over
its host's page budget (counted in the host's VisitState). A URL found in the batch (a link,
a redirect target) is queued only while the batch holds fewer than max_pages URLs (the first
day's share of its budget): the frontier's own URLs never wait on that. Links found on a page are each
reported once per source with whether they are new to the crawl and, if refused, why; only
links the trap defences accept and that belong to this batch's hosts are admitted. A found
URL of a host known to serve https is taken as https first (url_policy/https_hosts.py): one
URL per page, before the seen check and the queue.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple

from rbloom import Bloom

from ..url_policy.depth_limit import too_deep
from ..url_policy.https_hosts import HttpsHosts
from ..url_policy.trap_defences import TrapDefences
from ..url_policy.url_aliases import AliasRules
from ..url_policy.url_bloom import ShardSeenFilter
from ..url_policy.urls import host_of
from ..vocabulary import BATCH_LIMITS, DropReason
from .workbench import FetchTask, Workbench


class Link(NamedTuple):
    """One row of the links table."""

    source: str
    target: str  # normalised
    target_host: str
    depth: int  # the depth the target would be fetched at
    is_new: bool | None  # not seen by earlier cycles (None: another shard's host, not known here)
    dropped_reason: str | None  # why it will not be fetched, if a rule says so


class Admission:
    def __init__(self, workbench: Workbench, max_depth: int, max_pages_per_host: int,
                 traps: TrapDefences, follows_links_to: Callable[[str], bool],
                 seen: Bloom | ShardSeenFilter | None = None,
                 max_pages: int | None = None, https: HttpsHosts | None = None,
                 aliases: AliasRules | None = None, own_hosts: Callable[[str], bool] | None = None):
        """follows_links_to(host): may links to this host be fetched in this batch?
        seen: the URLs of earlier cycles, so links can be told new or known; a ShardSeenFilter
        holds one shard's hosts' URLs only, and a link to another shard's host is then neither
        (is_new None: not known here; the next frontier, which reads every known URL, decides).
        max_pages: URLs found in the batch join only while it holds fewer (None: no limit).
        https: the hosts known to serve https (learnt as the batch goes, too).
        aliases: the URL aliases learnt so far: a link is folded before anything else is asked of it.
        own_hosts(host): is the host one of this batch's shard? Only their new URLs count towards a
        host's growth (the trap defence weighs them against the host's fetches, and another
        shard's host is never fetched here); None: every host."""
        self.https = https or HttpsHosts()
        self.workbench = workbench
        self.max_depth = max_depth
        self.max_pages_per_host = max_pages_per_host
        self.max_pages = max_pages
        # The sum of every host's `admitted` (reservations included), kept as they change.
        self.admitted_total = 0
        self.priority_levels = len(workbench.weights)
        self.traps = traps
        self.follows_links_to = follows_links_to
        self.seen = seen.bloom if isinstance(seen, ShardSeenFilter) else seen
        self.seen_hosts = seen.holds if isinstance(seen, ShardSeenFilter) else None  # None: every host
        self.own_hosts = own_hosts
        self.aliases = aliases or AliasRules()
        self.links: list[Link] = []
        self._queued: set[str] = set()
        self._refused: dict[str, str] = {}  # URL -> why it was not queued (counted once)

    def admit(self, task: FetchTask, from_frontier: bool = False) -> bool:
        """Queue a task unless its URL is already queued, too deep, or over its host's budget.
        from_frontier: a frontier URL read from disk after the batch began (crawler/batches/disk_frontier.py):
        a link to it that a trap defence refused meanwhile does not keep it out."""
        url = task.url
        if url in self._queued or (url in self._refused and not from_frontier):
            return False
        if too_deep(task.depth, self.max_depth):
            return self._refuse(url, task.host, DropReason.DEPTH)
        state = self.workbench.state_of(task.host)
        if state.admitted >= self.max_pages_per_host:
            return self._refuse(url, task.host, DropReason.HOST_BUDGET)
        state.admitted += 1
        self.admitted_total += 1
        self._queued.add(url)
        self.workbench.add(task)
        return True

    def admit_found(self, task: FetchTask) -> bool:
        """Queue a URL found in the batch, unless the batch is full (max_pages) or admit refuses it."""
        if self.max_pages is not None and self.admitted_total >= self.max_pages:
            if task.url in self._queued or task.url in self._refused:
                return False
            return self._refuse(task.url, task.host, DropReason.DAY_BUDGET)
        return self.admit(task)

    def already_done(self, urls: Iterable[str]) -> None:
        """URLs a resumed batch finished before its crash: links to them are not queued again."""
        self._queued.update(urls)

    def _refuse(self, url: str, host: str, reason: DropReason) -> bool:
        self._refused[url] = reason
        self.traps.dropped[host][reason] += 1
        return False

    def links_found(self, page: FetchTask, targets: list[str], unfollowed: Sequence[str] = (),
                    why_unfollowed: DropReason | None = None, listed: bool = False) -> None:
        """Report the links of `page` and admit those this batch should fetch (one level deeper).
        `unfollowed`: links the page asks not to follow (`why_unfollowed`, crawler/content/page_signals.py): reported
        with it, not admitted, and not refused either (another page may link them followably).
        listed: `page` is a sitemap or feed (or robots.txt's Sitemap lines): its targets are the
        pages the host says it has, not links it grew, so they do not count towards the host's
        growth cap (a site's sitemap of thousands of pages, read after a page or two of it, is
        not a trap); every other defence judges them as any link."""
        depth = page.depth + 1
        priority = min(page.priority + 1, self.priority_levels)
        if self.https.hosts:
            targets = [self.https.upgrade(target) for target in targets]
            unfollowed = [self.https.upgrade(target) for target in unfollowed]
        for target in targets:
            target_host = host_of(target)
            target = self.aliases.fold(target, target_host)  # (an alias of a page is that page)
            if target in self._queued or target in self._refused:  # decided already
                reason = self._refused.get(target)
                # This batch's depth and budget limits say nothing about the URL itself.
                reason = None if reason in BATCH_LIMITS else reason
                self.links.append(Link(page.url, target, target_host, depth, False, reason))
                continue
            is_new = (self.seen is None or target not in self.seen) \
                if self.seen_hosts is None or self.seen_hosts(target_host) else None
            reason = self.traps.reason(target, target_host)
            if reason is not None:
                self._refused[target] = reason
            elif is_new and not listed and (self.own_hosts is None or self.own_hosts(target_host)):
                self.traps.observe_new_url(target_host, target)
            self.links.append(Link(page.url, target, target_host, depth, is_new, reason))
            if reason is None and self.follows_links_to(target_host):
                self.admit_found(FetchTask(target, target_host, depth, priority))
        for target in unfollowed:
            known = target in self._queued or target in self._refused
            is_new = not known and (self.seen is None or target not in self.seen)
            if not known and self.seen_hosts is not None and not self.seen_hosts(host_of(target)):
                is_new = None
            self.links.append(Link(page.url, target, host_of(target), depth, is_new, why_unfollowed))

    def redirect_found(self, page: FetchTask, target: str, chain: tuple[str, ...]) -> None:
        """A redirect continues the same fetch as a task of the target's host: same depth, the
        chain travels along, and the target host's robots.txt, delay and budget apply."""
        target = self.https.upgrade(target)
        target_host = host_of(target)
        self.links.append(Link(page.url, target, target_host, page.depth, False, None))
        if self.follows_links_to(target_host):
            self.admit_found(FetchTask(target, target_host, page.depth, page.priority, redirect_chain=chain))
