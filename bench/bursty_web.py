"""freshness.py's bursty scenario: a web whose pages change together, not one Poisson process each.

The shape follows what published studies of real page changes report; where no study gives a
figure, the value is this scenario's own choice and is said to be one (it was set before the
scheduler was measured on it, and not moved after):

- Hosts differ more than pages: the degree of change "varies widely across top-level domains"
  (Fetterly, Manasse, Najork, Wiener 2003, 151M pages weekly over 11 weeks), and "from the
  pages that do not disappear over time, about half do not change at all even after a year"
  (Ntoulas, Cho, Olston 2004, 154 sites weekly for a year). Here FROZEN_HOST_SHARE of the hosts
  never change at all (no page, no template): with the slow pages of the live hosts, about half
  the pages see no change of their text in a year.
- Most changes are small: "even after a whole year 50 % of the changed pages are less than 5 %
  different from their initial version" (Ntoulas et al. 2004); much of what moves is navigation,
  advertising and template (Adar, Teevan, Dumais, Elsas 2009, 55,000 pages crawled hourly for
  5 weeks). Here a live host's template is rebuilt at irregular times (log-normal gaps, median
  REBUILD_GAP_DAYS, sigma REBUILD_GAP_SIGMA: a choice) and a rebuild touches a share
  U(REBUILD_TOUCH) of the host's pages at once (a choice): the bytes change, the text does not
  (the SimHash moves at most one bit). Boilerplate-only changes come out as the larger part of
  all changes (printed as boilerplate_share).
- Past change predicts future change (Fetterly et al. 2003; Ntoulas et al. 2004), and "40 % of
  all web pages changed within a week" in Cho and Garcia-Molina's 720,000 pages crawled daily
  for four months (2000, as Fetterly et al. summarise it): a live host's ordinary pages change
  their text as Poisson processes with rates log-uniform in ORDINARY_RATE (weekly to every two
  years), on top of the rebuilds.
- Release-driven pages: RELEASE_PAGE_SHARE of a live host's pages (download, changelog and
  version pages: a choice) change their text at the host's releases (log-normal gaps, median
  RELEASE_GAP_DAYS), each release followed by a few corrections within days (Poisson
  RELEASE_FOLLOW_UPS per page, Exp(RELEASE_FOLLOW_UP_DAYS) after it): bursts.
- A few hot pages: "a large portion of pages changing more than hourly" among pages people
  visit (Adar et al. 2009); HOT_PAGE_SHARE of a live host's pages change their text 1 to 8
  times a day (a daily crawl can capture at most one version a day of them).
- Validators by host (as the Poisson scenario: a choice): 40 % an honest Last-Modified and
  ETag that follow the bytes (304 when unchanged), 30 % none, 30 % a Last-Modified of "now";
  a per-view counter on 30 % of hosts (the payload digest changes on every fetch, the SimHash
  by at most two bits: not a change, and not counted as one by the freshness score).
- Sitemaps on SITEMAP_HOST_SHARE of the hosts (the issue's "about half"): one sitemap URL per
  host, an ordinary page to every policy (it changes whenever a page of its host changes its
  text), whose <lastmod> of each page is the page's last change of text (a CMS's edit date:
  template rebuilds do not move it). When ours fetches a sitemap, its dates become change
  evidence for change_stats (as the fetch step records them).

Freshness is byte-level: a stored copy is fresh while the live page's bytes (less the
counter) are the ones fetched; a template rebuild makes it stale. The rate oracle (`rate`) is
each page's expected byte-level changes a day from the model's intensities: rebuilds x its
host's touch share, releases x (1 + corrections), its own Poisson rate; a sitemap's is the sum
of its host's text-change intensities. It knows rates, not the moments: a policy that reads
correlation (a rebuild seen on one page says the host's other pages changed) can beat it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

FROZEN_HOST_SHARE = 0.4
SITEMAP_HOST_SHARE = 0.5
REBUILD_GAP_DAYS, REBUILD_GAP_SIGMA = 30.0, 1.0
REBUILD_TOUCH = (0.5, 1.0)
REBUILD_SPREAD_DAYS = 0.02  # a rebuild is deployed over half an hour
RELEASE_PAGE_SHARE = 0.15
RELEASE_GAP_DAYS, RELEASE_GAP_SIGMA = 45.0, 0.8
RELEASE_FOLLOW_UPS, RELEASE_FOLLOW_UP_DAYS = 0.7, 1.5
HOT_PAGE_SHARE = 0.02
HOT_RATE = (1.0, 8.0)
ORDINARY_RATE = (1 / 730, 1 / 7)
HISTORY_DAYS = 365.0  # the history simulated before the crawl's first day
HOT_HISTORY_DAYS = 3.0  # (a hot page's last change before the crawl is within hours)
VALIDATOR_KINDS = (0.4, 0.3, 0.3)  # honest, none, lying
CHURN_HOST_SHARE = 0.3
_OFFSET, _SPAN = HISTORY_DAYS + 1.0, 2048.0  # a change's key: page x _SPAN + (t + _OFFSET)


class Changes:
    """Every page's change times, in one sorted array (page-major): the count of a page's
    changes up to t, its next change after t and its last change up to t, for many pages at once."""

    def __init__(self, page: np.ndarray, t: np.ndarray, n_pages: int):
        self.keys = np.sort(page * _SPAN + (t + _OFFSET))
        self.start = np.searchsorted(self.keys, np.arange(n_pages + 1) * _SPAN)
        self.times = self.keys - np.floor(self.keys / _SPAN) * _SPAN - _OFFSET

    def with_changes(self, page: np.ndarray, t: np.ndarray, n_pages: int) -> "Changes":
        """These changes and more (pages `page` changing at times `t`)."""
        own = np.floor(self.keys / _SPAN).astype(np.int64)
        return Changes(np.concatenate([own, page]), np.concatenate([self.times, t]), n_pages)

    def _position(self, idx, t) -> np.ndarray:
        return np.searchsorted(self.keys, idx * _SPAN + (np.asarray(t) + _OFFSET), side="right")

    def count_until(self, idx, t) -> np.ndarray:
        return self._position(idx, t) - self.start[idx]

    def next_after(self, idx, t) -> np.ndarray:
        pos = self._position(idx, t)
        has = pos < self.start[idx + 1]
        return np.where(has, self.times[np.minimum(pos, len(self.times) - 1)], np.inf)

    def last_until(self, idx, t, before: np.ndarray) -> np.ndarray:
        """The last change at or before t, else `before` (the page's age before the history)."""
        pos = self._position(idx, t) - 1
        has = pos >= self.start[idx]
        return np.where(has, self.times[np.maximum(pos, 0)], before)


@dataclass(frozen=True)
class BurstyWeb:
    """What the Web of freshness.py does not hold: the changes themselves."""

    changes: Changes  # every byte-level change
    text_changes: Changes  # the changes of text (a rebuild is not one)
    born: np.ndarray  # per page: its last change before the simulated history
    sitemap_of_host: np.ndarray  # per host: its sitemap's page index, -1 for none
    listed_by: np.ndarray  # per page: the page index of its host's sitemap, -1 for none
    kinds: dict  # page counts per kind, for the printed summary
    host_event_times: dict  # per host: its rebuilds and releases (to check detected host events)
    boilerplate_share: float  # of the byte-level changes in the crawl's days


def _log_uniform(rng, bounds, size) -> np.ndarray:
    return np.exp(rng.uniform(np.log(bounds[0]), np.log(bounds[1]), size))


def _renewal(rng, median_gap: float, sigma: float, end: float) -> np.ndarray:
    """Event times in [-HISTORY_DAYS, end) with log-normal gaps, the first at a random phase."""
    gaps = median_gap * np.exp(sigma * rng.standard_normal(int(3 * (end + HISTORY_DAYS) / median_gap) + 8))
    times = -HISTORY_DAYS + rng.uniform(0, 1) * gaps[0] + np.r_[0.0, np.cumsum(gaps[1:])]
    return times[times < end]


def _mean_gap(median_gap: float, sigma: float) -> float:
    return median_gap * float(np.exp(sigma * sigma / 2))


def build_bursty(n: int, n_hosts: int, rng: np.random.Generator, host_budget: int, days: int,
                 slow_delay_s: float):
    """(fields for freshness.Web, BurstyWeb): n pages on n_hosts hosts of log-normal sizes,
    plus one sitemap URL on each sitemap host."""
    end = days + 2.0
    host_size = rng.lognormal(0.0, 1.0, n_hosts)
    host = rng.choice(n_hosts, size=n, p=host_size / host_size.sum())
    frozen = rng.random(n_hosts) < FROZEN_HOST_SHARE
    with_sitemap = rng.random(n_hosts) < SITEMAP_HOST_SHARE
    draw = rng.random(n)
    hot = ~frozen[host] & (draw < HOT_PAGE_SHARE)
    release = ~frozen[host] & ~hot & (draw < HOT_PAGE_SHARE + RELEASE_PAGE_SHARE)
    ordinary = ~frozen[host] & ~hot & ~release
    pages, times, text, rate = [], [], [], np.zeros(n)

    def add(p, t, is_text):
        pages.append(np.asarray(p, np.int64)), times.append(np.asarray(t, np.float64))
        text.append(np.full(len(p), is_text))

    # Own Poisson changes of text: ordinary pages (a year of history), hot pages (a few days).
    own = np.where(hot, _log_uniform(rng, HOT_RATE, n), np.where(ordinary, _log_uniform(rng, ORDINARY_RATE, n), 0))
    rate += own
    history = np.where(hot, HOT_HISTORY_DAYS, HISTORY_DAYS)
    counts = rng.poisson(own * (end + history))
    owner = np.repeat(np.arange(n), counts)
    add(owner, end - rng.uniform(0, 1, len(owner)) * (end + history[owner]), True)
    by_host = [np.flatnonzero(host == h) for h in range(n_hosts)]
    event_times = {}
    for h in np.flatnonzero(~frozen):
        members = by_host[h]
        if not len(members):
            continue
        touch = rng.uniform(*REBUILD_TOUCH)
        rebuilds = _renewal(rng, REBUILD_GAP_DAYS, REBUILD_GAP_SIGMA, end)
        event_times[int(h)] = rebuilds
        for t in rebuilds:
            hit = members[rng.random(len(members)) < touch]
            add(hit, t + rng.uniform(0, REBUILD_SPREAD_DAYS, len(hit)), False)
        rate[members] += touch / _mean_gap(REBUILD_GAP_DAYS, REBUILD_GAP_SIGMA)
        released = members[release[members]]
        releases = _renewal(rng, RELEASE_GAP_DAYS, RELEASE_GAP_SIGMA, end)
        event_times[int(h)] = np.sort(np.concatenate([rebuilds, releases]))
        for t in releases:
            add(released, t + rng.uniform(0, REBUILD_SPREAD_DAYS, len(released)), True)
            follow = np.repeat(released, rng.poisson(RELEASE_FOLLOW_UPS, len(released)))
            add(follow, t + rng.exponential(RELEASE_FOLLOW_UP_DAYS, len(follow)), True)
        rate[released] += (1 + RELEASE_FOLLOW_UPS) / _mean_gap(RELEASE_GAP_DAYS, RELEASE_GAP_SIGMA)
    # One sitemap per sitemap host: its bytes change with every change of text on its host.
    sitemap_hosts = np.flatnonzero(with_sitemap)
    sitemap_of_host = np.full(n_hosts, -1, np.int64)
    sitemap_of_host[sitemap_hosts] = n + np.arange(len(sitemap_hosts))
    total = n + len(sitemap_hosts)
    page, t, is_text = np.concatenate(pages), np.concatenate(times), np.concatenate(text)
    listed = sitemap_of_host[host[page[is_text]]]
    keep = listed >= 0
    page = np.concatenate([page, listed[keep]])
    t = np.concatenate([t, t[is_text][keep]])
    is_text = np.concatenate([is_text, np.ones(keep.sum(), bool)])
    rate = np.concatenate([rate, [own[by_host[h]].sum() + (1 + RELEASE_FOLLOW_UPS) * release[by_host[h]].sum()
                                  / _mean_gap(RELEASE_GAP_DAYS, RELEASE_GAP_SIGMA) for h in sitemap_hosts]])
    all_host = np.concatenate([host, sitemap_hosts])
    crawl = t >= 0
    bursty = BurstyWeb(
        changes=Changes(page, t, total), text_changes=Changes(page[is_text], t[is_text], total),
        born=-rng.uniform(HISTORY_DAYS, 5 * HISTORY_DAYS, total),
        sitemap_of_host=sitemap_of_host, listed_by=np.concatenate([sitemap_of_host[host], np.full(len(sitemap_hosts), -1)]),
        kinds={"frozen-host": int(frozen[host].sum()), "hot": int(hot.sum()), "release": int(release.sum()),
               "ordinary": int(ordinary.sum()), "sitemap": len(sitemap_hosts)},
        host_event_times=event_times,
        boilerplate_share=float(np.mean(~is_text[crawl])) if crawl.any() else 0.0)
    inlinks = np.concatenate([np.minimum(rng.zipf(1.8, size=n) - 1, 100_000), np.zeros(len(sitemap_hosts), np.int64)])
    delay = np.where(rng.random(n_hosts) < 0.05, slow_delay_s, 1.0)
    validators = rng.choice(3, size=n_hosts, p=VALIDATOR_KINDS)
    hosts = [f"h{h:04d}.bursty.test" for h in range(n_hosts)]
    urls = [f"https://{hosts[h]}/p/{i}" for i, h in enumerate(host)] + \
           [f"https://{hosts[h]}/sitemap.xml" for h in sitemap_hosts]
    fields = dict(rate=rate, weight=1.0 + inlinks, inlinks=inlinks, host=all_host,
                  host_cap=np.minimum(host_budget, np.floor(86_400 / delay)), host_delay=delay,
                  honest_lm=validators == 0, lying_lm=validators == 2, churn=rng.random(n_hosts) < CHURN_HOST_SHARE,
                  urls=urls, hosts=hosts)
    return fields, bursty
