"""Which hosts and pages the ordinary generated site has, and their URLs.

Hosts are h0000.<domain> .. h{hosts-1}.<domain>, all on one port. Pages of a host: the home
page '/', /p/{n}.html for n in 0..pages_per_host-1, and /private/{k}.html (k < PRIVATE_PAGES)
on hosts whose robots.txt disallows /private/. A page is named by a key (kind, n):
('home', 0), ('p', n), ('private', k); robots.txt and the sitemap are ('robots', 0) and
('sitemap', 0), the feeds ('feed', 0) (RSS) and ('feed', 1) (Atom)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote

from ..host_protocol import normalize_host
from .host_traits import ATOM_PATH, RSS_PATH

HOME_PAGE = -1  # page index meaning "/" wherever a page index is taken
PRIVATE_PAGES = 5  # /private/0.html .. /private/4.html on hosts that disallow /private/

_HOST_LABEL = re.compile(r"h(\d{4,})")
_P_PATH = re.compile(r"/p/(0|[1-9][0-9]*)\.html")
_PRIVATE_PATH = re.compile(r"/private/(0|[1-9][0-9]*)\.html")

PageKey = tuple[str, int]
FEED_PATHS = (RSS_PATH, ATOM_PATH)  # ('feed', 0) and ('feed', 1); only hosts with that feed serve it


@dataclass(frozen=True)
class SiteShape:
    seed: int
    hosts: int
    pages_per_host: int
    port: int
    domain: str

    def __post_init__(self) -> None:
        if self.hosts < 1 or self.pages_per_host < 1:
            raise ValueError("hosts and pages_per_host must be at least 1")
        if not 0 <= self.port <= 65535:
            raise ValueError(f"bad port {self.port}")

    # ---- hosts ------------------------------------------------------------------------

    def hostname(self, host_index: int) -> str:
        return f"h{host_index:04d}.{self.domain}"

    def host_index(self, host: str) -> int | None:
        """Index of a generated host ('H0042.demo.test:8471' -> 42), None if not one of ours."""
        host = normalize_host(host)
        suffix = "." + self.domain
        if not host.endswith(suffix):
            return None
        match = _HOST_LABEL.fullmatch(host[: -len(suffix)])
        if not match:
            return None
        index = int(match.group(1))
        if index >= self.hosts or f"{index:04d}" != match.group(1):
            return None  # h42 or h00042 are not the canonical names
        return index

    def base_url(self, host_index: int) -> str:
        return f"http://{self.hostname(host_index)}:{self.port}"

    # ---- pages ------------------------------------------------------------------------

    @staticmethod
    def page_path(page_index: int) -> str:
        return "/" if page_index == HOME_PAGE else f"/p/{page_index}.html"

    @staticmethod
    def key_path(key: PageKey) -> str:
        kind, n = key
        if kind == "feed":
            return FEED_PATHS[n]
        return {"home": "/", "p": f"/p/{n}.html", "private": f"/private/{n}.html",
                "robots": "/robots.txt", "sitemap": "/sitemap.xml"}[kind]

    def page_url(self, host_index: int, page_index: int) -> str:
        return self.base_url(host_index) + self.page_path(page_index)

    def page_urls(self, host_index: int) -> list[str]:
        """Home page and every /p/ page of a host (what the sitemap lists; no private pages)."""
        base = self.base_url(host_index)
        return [base + "/"] + [f"{base}/p/{n}.html" for n in range(self.pages_per_host)]

    def page_key(self, page: int | str) -> PageKey:
        """The key of a page given as an index (HOME_PAGE for '/') or a path; ValueError else."""
        if isinstance(page, int):
            if page == HOME_PAGE:
                return ("home", 0)
            if not 0 <= page < self.pages_per_host:
                raise ValueError(f"page index {page} out of range 0..{self.pages_per_host - 1}")
            return ("p", page)
        key = self.route(page)
        if key is None or key[0] not in ("home", "p", "private"):
            raise ValueError(f"not a page path: {page!r}")
        return key

    def route(self, path: str) -> PageKey | None:
        """The key a request path names (query and fragment ignored), None if none."""
        path = unquote(path.split("?", 1)[0].split("#", 1)[0])
        if path == "/":
            return ("home", 0)
        if path == "/robots.txt":
            return ("robots", 0)
        if path == "/sitemap.xml":
            return ("sitemap", 0)
        if path in FEED_PATHS:
            return ("feed", FEED_PATHS.index(path))
        match = _P_PATH.fullmatch(path)
        if match:
            n = int(match.group(1))
            return ("p", n) if n < self.pages_per_host else None
        match = _PRIVATE_PATH.fullmatch(path)
        if match:
            n = int(match.group(1))
            return ("private", n) if n < PRIVATE_PAGES else None
        return None
