"""DemoWeb: the synthetic web as one object, the model the server serves and tests query.

It routes each request by hostname: to a registered special host (hostile, trap,
near-duplicate, ... handlers, see host_protocol.py), else to the ordinary generated site
(ordinary/ordinary_site.py). No I/O happens here, so tests can compute the expected web (link graph,
robots rules, change days) without a server. Everything is derived lazily from the seed,
so 2,000+ hosts cost nothing until a page is requested, and two processes with the same
parameters serve byte-identical pages.

Shape of the ordinary site (per host `hNNNN.<domain>`, all reachable on one port):
  /                 home page: links to the top pages, some random pages, other hosts
  /p/{n}.html       n in 0..pages_per_host-1 (ordinary/link_plan.py)
  /private/{k}.html only on hosts whose robots.txt disallows /private/; linked from pages
  /robots.txt       one of eight variants picked by host index (ordinary/robots_variants.py)
  /sitemap.xml      every home and /p/ page with its <lastmod> (its last content change)
  /feed.rss, /feed.atom  on some hosts: the recently changed pages (ordinary/host_traits.py)
Page text changes as a Poisson process per page (ordinary/change_model.py); links never do. The web
is seen at one time, `day` (days since EPOCH, fractional allowed): with_day() or the
server's set_day() move it, ordinary/truth.py exports every page's true rate and changes so far.

Opt-in host plug-ins (special_hosts/plugins.py) are enabled by keyword: DemoWeb(hostile=True),
DemoWeb(traps=True), DemoWeb(near_duplicates=True), DemoWeb(politeness=True),
DemoWeb(page_signals=True), DemoWeb(frames=True), DemoWeb(spa=True), DemoWeb(spa_sites=True); any may be
combined.
"""

from __future__ import annotations

from datetime import datetime
from typing import Mapping

from .host_protocol import HostHandler, normalize_host
from .ordinary.change_model import PageState, moment
from .ordinary.ordinary_site import OrdinarySite, unknown_host
from .ordinary.robots_variants import has_private_pages, robots_rules, robots_txt
from .ordinary.site_shape import HOME_PAGE, PRIVATE_PAGES, SiteShape
from .responses import Response
from .special_hosts.hostile_hosts import hostile_hosts
from .special_hosts.neardup_hosts import NearDupGroup, near_duplicate_groups, near_duplicate_homes
from .special_hosts.plugins import PLUGIN_OPTIONS, PLUGINS
from .special_hosts.politeness_hosts import politeness_hosts
from .special_hosts.spec_hosts import HostileHost
from .special_hosts.trap_hosts import TrapHost, trap_hosts


class DemoWeb:
    """The synthetic web. Parameters are fixed at construction; use with_port()/with_day()
    to get a sibling that shares nothing mutable (each instance has its own page cache)."""

    def __init__(self, seed: int = 1, hosts: int = 50, pages_per_host: int = 300, day: float = 0,
                 port: int = 8471, domain: str = "demo.test", *, validators: str = "mixed",
                 cache_pages: int = 1024, **plugins: bool):
        """day: the time the web is seen at, in days since EPOCH (2.5 = noon of day 2).
        validators: "mixed" (some hosts send none or a lying Last-Modified, see
        ordinary/host_traits.py) or "honest". `plugins`: one keyword per host plug-in
        (PLUGIN_OPTIONS: hostile, traps, near_duplicates, politeness, page_signals, frames, spa, spa_sites); True registers that
        plug-in's hosts."""
        unknown = set(plugins) - set(PLUGIN_OPTIONS)
        if unknown:
            raise TypeError(f"DemoWeb got unknown option(s) {sorted(unknown)}; "
                            f"host plug-ins are {list(PLUGIN_OPTIONS)}")
        if day < 0:
            raise ValueError("day must be >= 0")
        self._shape = SiteShape(int(seed), int(hosts), int(pages_per_host), int(port),
                                domain.lower().strip("."))
        self._day = int(day) if float(day).is_integer() else float(day)
        self._cache_pages = cache_pages
        self._site = OrdinarySite(self._shape, float(day), validators, cache_pages)
        self._special: dict[str, HostHandler] = {}
        for plugin in PLUGINS:
            if plugins.get(plugin.option):
                plugin.install(self)

    # ---- parameters -------------------------------------------------------------------

    seed = property(lambda self: self._shape.seed)
    hosts = property(lambda self: self._shape.hosts)
    pages_per_host = property(lambda self: self._shape.pages_per_host)
    day = property(lambda self: self._day)
    validators = property(lambda self: self._site.validators)
    port = property(lambda self: self._shape.port)
    domain = property(lambda self: self._shape.domain)

    def _replace(self, **changes) -> "DemoWeb":
        params = dict(seed=self.seed, hosts=self.hosts, pages_per_host=self.pages_per_host,
                      day=self._day, port=self.port, domain=self.domain, validators=self.validators)
        params.update(changes)
        web = DemoWeb(**params, cache_pages=self._cache_pages)
        web._special = dict(self._special)
        return web

    def with_port(self, port: int) -> "DemoWeb":
        """Same web, URLs pointing at `port` (the server calls this once it has bound)."""
        return self if port == self.port else self._replace(port=port)

    def with_day(self, day: float) -> "DemoWeb":
        """Same web as seen at another time (days since EPOCH)."""
        return self if day == self._day else self._replace(day=day)

    def with_fresh_state(self) -> "DemoWeb":
        """A sibling whose stateful special hosts (429 once, flapping 503, session-id view
        counters) start from zero; the server calls it when it starts. Handlers with a fresh()
        method are replaced by fresh() copies; with_port()/with_day() share state instead."""
        if not any(hasattr(h, "fresh") for h in self._special.values()):
            return self
        web = self._replace()
        web._special = {name: (h.fresh() if hasattr(h, "fresh") else h)
                        for name, h in self._special.items()}
        return web

    def __repr__(self) -> str:
        return (f"DemoWeb(seed={self.seed}, hosts={self.hosts}, pages_per_host={self.pages_per_host}, "
                f"day={self._day}, port={self.port}, domain={self.domain!r}, "
                f"validators={self.validators!r})")

    # ---- hosts and URLs ---------------------------------------------------------------

    def hostname(self, host_index: int) -> str:
        return self._shape.hostname(host_index)

    def hostnames(self) -> list[str]:
        return [self._shape.hostname(i) for i in range(self.hosts)]

    def host_index(self, host: str) -> int | None:
        """Index of a generated host ('H0042.demo.test:8471' -> 42), None if not one of ours."""
        return self._shape.host_index(host)

    def base_url(self, host_index: int) -> str:
        return self._shape.base_url(host_index)

    def page_path(self, page_index: int) -> str:
        return self._shape.page_path(page_index)

    def page_url(self, host_index: int, page_index: int) -> str:
        return self._shape.page_url(host_index, page_index)

    def page_urls(self, host_index: int) -> list[str]:
        """Home page and every /p/ page of a host (what the sitemap lists; no private pages)."""
        return self._shape.page_urls(host_index)

    def private_urls(self, host_index: int) -> list[str]:
        """The robots-disallowed pages of a host (empty unless it disallows /private/)."""
        if not has_private_pages(host_index):
            return []
        return [f"{self.base_url(host_index)}/private/{k}.html" for k in range(PRIVATE_PAGES)]

    def seed_urls(self, per_host: int = 1) -> list[str]:
        """Per host: the home page, then /p/0.html, /p/1.html ... up to per_host URLs."""
        urls = []
        for h in range(self.hosts):
            urls.append(self.base_url(h) + "/")
            urls.extend(self.page_url(h, n) for n in range(min(per_host - 1, self.pages_per_host)))
        return urls

    # ---- special hosts ----------------------------------------------------------------

    def register_host(self, hostname: str, handler: HostHandler) -> None:
        """Serve `hostname` with `handler` (called as handler(web, path, headers)) instead of
        the generated site. Carried over by with_port()/with_day()."""
        self._special[normalize_host(hostname)] = handler

    def special_hostnames(self) -> list[str]:
        return sorted(self._special)

    def special_handlers(self) -> Mapping[str, HostHandler]:
        """hostname -> handler of every registered special host (read-only view)."""
        return dict(self._special)

    def plugin_homes(self) -> list[str]:
        """Home pages of every registered plug-in host, in plugins.PLUGINS order."""
        return [url for plugin in PLUGINS for url in plugin.homes(self)]

    def hostile_hosts(self) -> list[HostileHost]:
        """The registered hostile hosts (URLs carry this web's port), in hostile_hosts.KINDS
        order; [] unless hostile=True / add_hostile_hosts()."""
        return hostile_hosts(self)

    def trap_hosts(self) -> list[TrapHost]:
        """The registered crawler-trap hosts (URLs carry this web's port), in TRAP_KINDS
        order; [] unless traps=True / add_trap_hosts()."""
        return trap_hosts(self)

    def near_duplicate_groups(self) -> list[NearDupGroup]:
        """Labelled groups of the near-duplicate hosts (URLs carry this web's port), in
        neardup_hosts.GROUPS order; [] unless near_duplicates=True."""
        return near_duplicate_groups(self)

    def politeness_hosts(self) -> list[HostileHost]:
        """The registered politeness test hosts (cross-host and robots.txt redirects,
        Retry-After, slow), in politeness_hosts.KINDS order; [] unless politeness=True."""
        return politeness_hosts(self)

    def near_duplicate_homes(self) -> list[str]:
        """Home page URLs of the near-duplicate hosts (every labelled URL is linked from one)."""
        return near_duplicate_homes(self)

    # ---- the ordinary site: robots, change model, links, rendering ---------------------

    def robots_rules(self, host_index: int) -> dict:
        """What the host's robots.txt says for User-agent *: disallow (path prefixes),
        crawl_delay (seconds or None), sitemaps (URLs), present (False: robots.txt is 404)."""
        return robots_rules(self._shape, host_index)

    def robots_txt(self, host_index: int) -> str | None:
        return robots_txt(self._shape, host_index)

    def page_state(self, host_index: int, page: int | str, at: float | None = None) -> PageState:
        """The page at time `at` (default: this web's day): its true rate, content versions
        so far, all changes so far, last content change and last change of any kind.
        `page` is a page index (HOME_PAGE = -1 for '/') or a path."""
        return self._site.state(host_index, self._shape.page_key(page), at)

    def last_modified(self, host_index: int, page: int | str) -> datetime:
        """What an honest Last-Modified says for the page: its last change of any kind."""
        return moment(self.page_state(host_index, page).last_event or 0.0)

    def outlinks(self, host_index: int, page: int | str) -> list[str]:
        """Absolute URLs (no fragment) the page links to, deduplicated, in document order.
        `page` is a page index (HOME_PAGE for '/') or a path like '/p/7.html'."""
        return self._site.link_plan(host_index, *self._shape.page_key(page)).urls()

    def render_page(self, host_index: int, page: int | str, at: float | None = None) -> bytes:
        """The HTML of a page as it is at time `at` (default: this web's day)."""
        return self._site.render(host_index, self._shape.page_key(page), at)

    def render_sitemap(self, host_index: int) -> bytes:
        return self._site.sitemap(host_index)[0]

    # ---- HTTP -------------------------------------------------------------------------

    def respond(self, host: str, path: str, headers: Mapping[str, str] | None = None) -> Response:
        """The response to GET `path` (may carry a query) on `host` (port is ignored).
        `headers` has lowercase keys; If-None-Match / If-Modified-Since give 304s."""
        headers = headers or {}
        host = normalize_host(host)
        handler = self._special.get(host) or self._site.handler_for(host)
        if handler is None:
            return unknown_host()
        return handler(self, path, headers)


__all__ = ["DemoWeb", "HOME_PAGE"]
