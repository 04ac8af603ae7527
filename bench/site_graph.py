"""freshness.py --cold-start: the links of the simulated web, which a crawl that starts from
one home page per host must follow to learn the rest.

Every choice below is this scenario's own (no study is followed for the numbers) and was set
before the scheduler was measured on it:

- Site shape. A host's pages are its home (depth 0), listing pages (HUB_SHARE of them) and
  leaves. Up to SECTION_COUNT listings are sections (depth 1, linked from every page of the
  host: its navigation); the other listings hang in pagination chains below the sections
  (each links to the next), at most CHAIN_MAX long, so deep pages exist; every leaf sits on
  one listing (one level below it). A page with no other in-link is reachable only through
  its chain: deep down.
- In-links. A page's importance in freshness.py is 1 + in-links (a Zipf draw); that many
  other pages link to it (at most SOURCES_MAX distinct sources), OWN_HOST_SHARE of them on
  its own host, the others anywhere: a few pages are linked from everywhere, half from their
  listing alone.
- Template listing hosts (TEMPLATE_HOST_SHARE): every page is a listing in the host's shared
  template, like a blog's tag pages: its main text is the template's (the fetch log's SimHash
  is the host's, give or take a bit), its list is its own (LIST_LINKS links to pages of the
  host). Their pages are distinct; a crawler that judges copies by the main text alone takes
  the host for a copier.
- Query aliases (ALIAS_HOST_SHARE): on half of these hosts links to a leaf carry one of
  ALIAS_VALUES values of a parameter the server ignores (`?from=k`, half the links); on the
  others the home is index.html and every page links it as `index.html?<page>.html`, as
  javadoc's frames do: one page under as many URLs as the host has pages.
- Sitemaps (SITEMAP_HOST_SHARE of the hosts in the Poisson web; the bursty web's own): the
  home links it, and it lists every page of its host.
- Pages created during the run: NEW_PAGE_SHARE of the leaves (not on a frozen host) appear
  on a day drawn uniformly from the run's days, at the day's start; their listing and their
  host's sitemap change then (they link the new page).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

HUB_SHARE = 0.08
SECTION_COUNT = 6
CHAIN_MAX = 10
SOURCES_MAX = 2000
OWN_HOST_SHARE = 0.8
TEMPLATE_HOST_SHARE = 0.05
LIST_LINKS = (5, 15)
ALIAS_HOST_SHARE = 0.06
ALIAS_VALUES = 4
SITEMAP_HOST_SHARE = 0.3
NEW_PAGE_SHARE = 0.1

PLAIN, PARAM_ALIAS, FRAMES = 0, 1, 2  # a host's alias kind
NAV, LISTING, EXTRA, SITEMAP = 0, 1, 2, 3  # what a link is


@dataclass(frozen=True)
class SiteGraph:
    """The links of a web of n pages (freshness.Web) and when each page appears."""

    home: np.ndarray  # per host: its home page (-1: a host with no page)
    depth: np.ndarray  # per page: the fewest links from its home
    born: np.ndarray  # per page: the day it appears (0: before the crawl)
    listing_of: np.ndarray  # per page: the listing it sits on (-1: none)
    out_start: np.ndarray  # links of page p: out_target[out_start[p]:out_start[p + 1]]
    out_target: np.ndarray
    out_kind: np.ndarray  # NAV, LISTING, EXTRA, SITEMAP
    out_alias: np.ndarray  # the link's alias value (-1: the page's own URL)
    template_host: np.ndarray  # per host
    alias_kind: np.ndarray  # per host: PLAIN, PARAM_ALIAS, FRAMES
    sitemap_of_host: np.ndarray  # per host: its sitemap page (-1: none)
    urls: list[str]  # each page's own URL
    page_events: tuple[np.ndarray, np.ndarray]  # (page, time): a listing or sitemap changes as a page appears

    def alias_url(self, source: np.ndarray, target: np.ndarray, alias: np.ndarray, hosts: list[str],
                  host_of: np.ndarray) -> list[str]:
        """The URL each link (source -> target, alias value) is written with."""
        out = []
        for s, t, a in zip(source.tolist(), target.tolist(), alias.tolist()):
            if a < 0:
                out.append(self.urls[t])
            elif self.alias_kind[host_of[t]] == FRAMES:
                out.append(f"https://{hosts[host_of[t]]}/index.html?p{s}.html=")
            else:
                out.append(f"{self.urls[t]}?from={a}")
        return out


def build_site_graph(host: np.ndarray, inlinks: np.ndarray, n_hosts: int, hosts: list[str],
                     sitemap_of_host: np.ndarray, frozen_host: np.ndarray, days: int,
                     rng: np.random.Generator) -> SiteGraph:
    """The site graph of pages `host` (each page's host; sitemap pages, listed in
    sitemap_of_host, included) with `inlinks` drawn for their importance."""
    n = len(host)
    is_sitemap = np.zeros(n, bool)
    is_sitemap[sitemap_of_host[sitemap_of_host >= 0]] = True
    order = np.lexsort((rng.random(n), is_sitemap, host))  # by host, sitemaps last, the rest shuffled
    ordered_host = host[order]
    start = np.searchsorted(ordered_host, np.arange(n_hosts + 1))
    size = np.diff(start) - (sitemap_of_host >= 0)  # pages less the sitemap
    rank = np.empty(n, np.int64)
    rank[order] = np.arange(n) - start[ordered_host]  # place within the host: 0 is the home
    rank[is_sitemap] = -1
    home = np.where(size > 0, order[np.minimum(start[:-1], n - 1)], -1)
    hubs = np.where(size > 1, np.maximum(1, np.round(HUB_SHARE * size)).astype(np.int64), 0)
    sections = np.minimum(hubs, np.maximum(SECTION_COUNT, np.ceil(hubs / CHAIN_MAX))).astype(np.int64)

    h = host
    is_home = rank == 0
    is_hub = (rank >= 1) & (rank <= hubs[h])
    is_leaf = rank > hubs[h]
    hub_no = rank - 1  # among the host's listings
    hub_depth = np.where(is_hub, 1 + hub_no // np.maximum(sections[h], 1), 0)
    # The page at place r of a host: order[start[h] + r].
    page_at = lambda hh, r: order[start[hh] + r]  # noqa: E731
    listing_of = np.full(n, -1, np.int64)
    chained = is_hub & (hub_no >= sections[h])
    listing_of[chained] = page_at(h[chained], 1 + hub_no[chained] - sections[h][chained])
    leaf_hub = (rng.random(n) * np.maximum(hubs[h], 1)).astype(np.int64)
    listing_of[is_leaf] = page_at(h[is_leaf], 1 + leaf_hub[is_leaf])
    depth = np.zeros(n, np.int64)
    depth[is_hub] = hub_depth[is_hub]
    depth[is_leaf] = 1 + 1 + leaf_hub[is_leaf] // np.maximum(sections[h][is_leaf], 1)
    depth[is_sitemap] = 1

    template_host = rng.random(n_hosts) < TEMPLATE_HOST_SHARE
    alias_host = ~template_host & (rng.random(n_hosts) < ALIAS_HOST_SHARE)
    alias_kind = np.where(alias_host, np.where(rng.random(n_hosts) < 0.5, PARAM_ALIAS, FRAMES), PLAIN)

    born = np.zeros(n, np.float64)
    new = is_leaf & ~frozen_host[h] & (rng.random(n) < NEW_PAGE_SHARE)
    born[new] = rng.integers(1, max(days, 2), new.sum())

    links = []  # (source, target, kind) arrays
    # Navigation: every page (not a sitemap) links its home and its host's sections.
    pages = np.flatnonzero(~is_sitemap & (rank >= 0))
    links.append((pages, home[h[pages]], NAV))
    for k in range(SECTION_COUNT):
        with_k = pages[sections[h[pages]] > k]
        links.append((with_k, page_at(h[with_k], 1 + k), NAV))
    # (the home links every section, those past the navigation's SECTION_COUNT too)
    homes = np.flatnonzero(is_home)
    per_home = sections[h[homes]]
    section_of_home = np.arange(per_home.sum()) - np.repeat(np.cumsum(per_home) - per_home, per_home)
    links.append((np.repeat(homes, per_home), page_at(np.repeat(h[homes], per_home), 1 + section_of_home), NAV))
    # Listings link what sits on them; the home links its sitemap.
    listed = np.flatnonzero(listing_of >= 0)
    links.append((listing_of[listed], listed, LISTING))
    mapped = np.flatnonzero(sitemap_of_host >= 0)
    links.append((home[mapped[home[mapped] >= 0]], sitemap_of_host[mapped[home[mapped] >= 0]], NAV))
    # A sitemap lists every page of its host.
    listed_pages = np.flatnonzero(~is_sitemap & (sitemap_of_host[h] >= 0))
    links.append((sitemap_of_host[h[listed_pages]], listed_pages, SITEMAP))
    # In-links for importance: that many sources, most on the target's own host.
    want = np.minimum(inlinks, SOURCES_MAX)
    target = np.repeat(np.arange(n), want)
    own = rng.random(len(target)) < OWN_HOST_SHARE
    th = h[target]
    source = np.where(own, page_at(th, (rng.random(len(target)) * np.maximum(size[th], 1)).astype(np.int64)),
                      pages[(rng.random(len(target)) * len(pages)).astype(np.int64)])
    links.append((source, target, EXTRA))
    # Template hosts: each page lists pages of its host, its own list.
    templated = pages[template_host[h[pages]]]
    count = rng.integers(*LIST_LINKS, len(templated), endpoint=True)
    lister = np.repeat(templated, count)
    lh = h[lister]
    links.append((lister, page_at(lh, (rng.random(len(lister)) * size[lh]).astype(np.int64)), EXTRA))

    source = np.concatenate([s for s, _, _ in links])
    target = np.concatenate([t for _, t, _ in links])
    kind = np.concatenate([np.full(len(s), k, np.int8) for s, _, k in links])
    keep = (source != target) & (source >= 0) & (target >= 0)
    source, target, kind = source[keep], target[keep], kind[keep]
    # One link per (source, target): the first kind wins (navigation, listing, sitemap, extra).
    key = source * n + target
    _, first = np.unique(key, return_index=True)
    source, target, kind = source[first], target[first], kind[first]  # (sorted by source)
    alias = np.full(len(target), -1, np.int64)
    param = ((alias_kind[h[target]] == PARAM_ALIAS) & is_leaf[target] & (kind != SITEMAP)
             & (rng.random(len(target)) < 0.5))
    alias[param] = rng.integers(0, ALIAS_VALUES, param.sum())
    frames = (alias_kind[h[target]] == FRAMES) & is_home[target] & (kind != SITEMAP)
    alias[frames] = 0  # (written with the source: alias_url)
    out_start = np.searchsorted(source, np.arange(n + 1))

    urls = []
    for p in range(n):
        name = hosts[h[p]]
        if is_sitemap[p]:
            urls.append(f"https://{name}/sitemap.xml")
        elif is_home[p]:
            urls.append(f"https://{name}/index.html" if alias_kind[h[p]] == FRAMES else f"https://{name}/")
        elif is_hub[p]:
            urls.append(f"https://{name}/list/{p}")
        else:
            urls.append(f"https://{name}/p/{p}")
    # A new page changes its listing and its host's sitemap when it appears.
    appear = np.flatnonzero(new)
    event_page = np.concatenate([listing_of[appear], sitemap_of_host[h[appear]]])
    event_time = np.concatenate([born[appear], born[appear]])
    real = event_page >= 0
    return SiteGraph(home=home, depth=depth, born=born, listing_of=listing_of, out_start=out_start,
                     out_target=target, out_kind=kind, out_alias=alias, template_host=template_host,
                     alias_kind=alias_kind, sitemap_of_host=sitemap_of_host, urls=urls,
                     page_events=(event_page[real], event_time[real]))


def outlinks(graph: SiteGraph, pages: np.ndarray, when: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(source, target, alias) of the links the fetched pages show at their fetch times: only
    pages that exist by then."""
    counts = graph.out_start[pages + 1] - graph.out_start[pages]
    source = np.repeat(pages, counts)
    at = np.repeat(when, counts)
    offsets = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    position = np.repeat(graph.out_start[pages], counts) + offsets
    target = graph.out_target[position]
    there = graph.born[target] <= at
    return source[there], target[there], graph.out_alias[position][there]
