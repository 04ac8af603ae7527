"""The ordinary generated site as a host family: answers every request for h0000.<domain>,
h0001.<domain>, ... with the page, robots.txt, sitemap or feed of that host as it is at the
web's time `now` (days since EPOCH).

Validators follow the page's versions (change_model.py) on honest hosts; host_traits.py
says which hosts send none or a lying Last-Modified. Rendered responses and link plans are
kept in bounded per-instance LRU caches (functools.lru_cache is thread-safe, so tests may
call respond() while a server thread serves the same web)."""

from __future__ import annotations

import functools
from typing import Mapping

from ..host_protocol import HostHandler
from ..responses import (HTML_TYPE, PLAIN_TYPE, XML_TYPE, Resource, Response, answer, error_response,
                         make_resource)
from .change_model import EPOCH, PageState, moment, page_state
from .host_traits import FEED_ENTRIES, feed_path, validator_policy
from .link_plan import LinkPlan, build_link_plan
from .robots_variants import has_private_pages, robots_txt
from .site_pages import render_feed, render_page, render_sitemap
from .site_shape import HOME_PAGE, PageKey, SiteShape

FEED_TYPES = ("application/rss+xml; charset=utf-8", "application/atom+xml; charset=utf-8")


class OrdinarySite:
    def __init__(self, shape: SiteShape, now: float, validators: str = "mixed",
                 cache_pages: int = 1024):
        validator_policy(0, validators)  # a bad mode fails here
        self.shape = shape
        self.now = now
        self.validators = validators
        self.link_plan = functools.lru_cache(maxsize=cache_pages * 2)(self._build_link_plan)
        self._resource = functools.lru_cache(maxsize=cache_pages)(self._build_resource)

    # ---- the host family protocol ----------------------------------------------------

    def handler_for(self, hostname: str) -> HostHandler | None:
        host_index = self.shape.host_index(hostname)
        if host_index is None:
            return None
        return lambda _web, path, headers: self.respond(host_index, path, headers)

    def respond(self, host_index: int, path: str, headers: Mapping[str, str]) -> Response:
        key = self.shape.route(path)
        return answer(self._resource(host_index, *key) if key is not None else None, headers)

    # ---- the model -------------------------------------------------------------------

    def state(self, host_index: int, key: PageKey, at: float | None = None) -> PageState:
        """The page at time `at` (default: the web's now)."""
        return page_state(self.shape.seed, host_index, *key, self.now if at is None else at)

    def render(self, host_index: int, key: PageKey, at: float | None = None) -> bytes:
        return render_page(self.shape, self.link_plan(host_index, *key), host_index, *key,
                           self.state(host_index, key, at))

    def _page_states(self, host_index: int) -> list[tuple[str, PageState]]:
        """(url, state) of the home page and every /p/ page, in page_urls() order."""
        urls = self.shape.page_urls(host_index)
        pages = [HOME_PAGE, *range(self.shape.pages_per_host)]
        return [(url, self.state(host_index, self.shape.page_key(p))) for url, p in zip(urls, pages)]

    def sitemap(self, host_index: int) -> tuple[bytes, float | None]:
        """The sitemap and the time of the last content change it lists. A "lying" host's
        sitemap dates every page "now", as a CMS that stamps the moment it writes the file."""
        lasts = [state.last_change for _, state in self._page_states(host_index)]
        if validator_policy(host_index, self.validators) == "lying":
            lasts = [self.now] * len(lasts)
        return render_sitemap(self.shape, host_index, lasts), max((t for t in lasts if t is not None), default=None)

    def feed(self, host_index: int) -> tuple[bytes, float | None]:
        """The feed of the FEED_ENTRIES most recently changed pages, and its newest change."""
        changed = [(url, s.last_change, s.versions) for url, s in self._page_states(host_index)
                   if s.last_change is not None]
        changed.sort(key=lambda e: (-e[1], e[0]))
        entries = changed[:FEED_ENTRIES]
        return render_feed(self.shape, host_index, entries), entries[0][1] if entries else None

    def _build_link_plan(self, host_index: int, kind: str, n: int) -> LinkPlan:
        return build_link_plan(self.shape, host_index, kind, n)

    def _build_resource(self, host_index: int, kind: str, n: int) -> Resource | None:
        if kind == "robots":
            text = robots_txt(self.shape, host_index)
            return None if text is None else make_resource(text.encode("utf-8"), PLAIN_TYPE, EPOCH)
        if kind == "sitemap":
            body, last = self.sitemap(host_index)
            return make_resource(body, XML_TYPE, moment(last or 0.0))
        if kind == "feed":
            if feed_path(host_index) != self.shape.key_path((kind, n)):
                return None
            body, last = self.feed(host_index)
            return make_resource(body, FEED_TYPES[n], moment(last or 0.0))
        if kind == "private" and not has_private_pages(host_index):
            return None
        state = self.state(host_index, (kind, n))
        body = render_page(self.shape, self.link_plan(host_index, kind, n), host_index, kind, n, state)
        policy = validator_policy(host_index, self.validators)
        if policy == "none":
            return make_resource(body, HTML_TYPE, None, etag=False)
        if policy == "lying":
            return make_resource(body, HTML_TYPE, moment(self.now), etag=False)
        return make_resource(body, HTML_TYPE, moment(state.last_event or 0.0))


def unknown_host() -> Response:
    return error_response(404, "Unknown Host")
