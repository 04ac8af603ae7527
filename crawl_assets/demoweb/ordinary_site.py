"""The ordinary generated site as a host family: answers every request for h0000.<domain>,
h0001.<domain>, ... with the page, robots.txt or sitemap of that host on the web's day.

Rendered responses and link plans are kept in bounded per-instance LRU caches
(functools.lru_cache is thread-safe, so tests may call respond() while a server thread
serves the same web)."""

from __future__ import annotations

import functools
from typing import Mapping

from .change_model import day_datetime, version_day
from .host_protocol import HostHandler
from .link_plan import LinkPlan, build_link_plan
from .responses import HTML_TYPE, PLAIN_TYPE, XML_TYPE, Resource, Response, answer, error_response, make_resource
from .robots_variants import has_private_pages, robots_txt
from .site_pages import render_page, render_sitemap
from .site_shape import HOME_PAGE, PageKey, SiteShape


class OrdinarySite:
    def __init__(self, shape: SiteShape, day: int, cache_pages: int = 1024):
        self.shape = shape
        self.day = day
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

    def version_day(self, host_index: int, key: PageKey, day: int | None = None) -> int:
        """The day the page's version shown on `day` (default: the web's day) appeared."""
        return version_day(self.shape.seed, host_index, *key, self.day if day is None else day)

    def render(self, host_index: int, key: PageKey, version: int | None = None) -> bytes:
        if version is None:
            version = self.version_day(host_index, key)
        return render_page(self.shape, self.link_plan(host_index, *key), host_index, *key, version)

    def sitemap(self, host_index: int) -> bytes:
        pages = [HOME_PAGE, *range(self.shape.pages_per_host)]
        lastmods = [day_datetime(self.version_day(host_index, self.shape.page_key(p))).date().isoformat()
                    for p in pages]
        return render_sitemap(self.shape, host_index, lastmods)

    def _build_link_plan(self, host_index: int, kind: str, n: int) -> LinkPlan:
        return build_link_plan(self.shape, host_index, kind, n)

    def _build_resource(self, host_index: int, kind: str, n: int) -> Resource | None:
        if kind == "robots":
            text = robots_txt(self.shape, host_index)
            if text is None:
                return None
            body, ctype, version = text.encode("utf-8"), PLAIN_TYPE, 0
        elif kind == "sitemap":
            body, ctype = self.sitemap(host_index), XML_TYPE
            version = self.day  # the home page changes daily, so the sitemap does too
        elif kind == "private" and not has_private_pages(host_index):
            return None
        else:
            version = self.version_day(host_index, (kind, n))
            body, ctype = self.render(host_index, (kind, n), version), HTML_TYPE
        return make_resource(body, ctype, day_datetime(version))


def unknown_host() -> Response:
    return error_response(404, "Unknown Host")
