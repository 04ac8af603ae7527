"""Outlinks of an HTML page, resolved against the page's base: the pages it links (to
queue), told apart by whether their rel asks not to follow them, and the resources it loads
(recorded, not queued); and the page's robots <meta> tags (page_signals.py says what they
mean). link_sources.py is the policy: which elements and attributes are read, and which
name a page and which a resource.

The page is read from the tree html_tree.parse_html builds, the one its main text is then
taken from (one parse a page). The elements come as one list (`values()`): indexing or
iterating resiliparse's element collection one by one runs the selector again for each
element, quadratic in the number of links.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

from ..url_policy.urls import UrlError, normalize_url, resolve_href
from .html_tree import HTMLTree, parse_html
from .link_sources import (
    FRAMELESS, NOSCRIPT, PAGE_ATTRIBUTES, RESOURCE_ATTRIBUTES, SRCSET, link_kind, refresh_target, selector_for, srcset_urls,
)
from .page_signals import PageDirectives, meta_directives, rel_nofollow

_SKIPPED = ("#", "javascript:", "mailto:", "tel:", "data:")
_FRAMELESS_LINKS = "a[href], area[href]"


class PageScan(NamedTuple):
    links: list[str]  # distinct normalised http(s) outlinks to follow, in document order
    nofollow_links: list[str]  # those only linked with rel="nofollow" (or ugc, sponsored)
    directives: PageDirectives  # of the page's <meta name="robots"> (and our agent's name)
    resources: list[str] = []  # distinct URLs of images, scripts, styles...: not pages, not queued
    noscript_texts: list[str] = []  # the text of each <noscript>, in document order (script_signals.py)


class _Found:
    """The raw URLs of one page as they are met, in document order, before resolution."""

    def __init__(self):
        self.pages: list[tuple[str, bool]] = []  # (href, nofollow)
        self.resources: list[str] = []
        self.metas: list[tuple[str | None, str | None]] = []  # robots <meta> (name, content)
        self.base: str | None = None  # the first <base href>
        self.noscript_texts: list[str] = []

    def read(self, node) -> None:
        tag = node.tag
        attribute = PAGE_ATTRIBUTES.get(tag)
        if attribute is not None:
            self.pages.append((node.getattr(attribute), tag in ("a", "area") and rel_nofollow(node.getattr("rel"))))
        elif tag in RESOURCE_ATTRIBUTES:
            for name in RESOURCE_ATTRIBUTES[tag]:
                value = node.getattr(name)
                if value:
                    self.resources += srcset_urls(value) if name == SRCSET else [value]
        elif tag == "link":
            self._link(node)
        elif tag == "meta":
            self._meta(node)
        elif tag == "base":
            if self.base is None:
                self.base = node.getattr("href")
        elif tag == FRAMELESS:
            self._frameless(node.text)
        elif tag == NOSCRIPT:
            self.noscript_texts.append(node.text)

    def _link(self, node) -> None:
        rel = node.getattr("rel")
        kind = link_kind(rel)
        if kind == "page":
            self.pages.append((node.getattr("href"), rel_nofollow(rel)))
        elif kind == "resource":
            self.resources.append(node.getattr("href"))

    def _meta(self, node) -> None:
        name = node.getattr("name")
        if name is not None:
            self.metas.append((name, node.getattr("content")))
        elif (node.getattr("http-equiv") or "").strip().lower() == "refresh":
            target = refresh_target(node.getattr("content"))
            if target:
                self.pages.append((target, False))

    def _frameless(self, markup: str) -> None:
        """<noframes> content is text to the parser (in a frameset and in a body alike):
        its links are read from a parse of their own."""
        if "<" not in markup:
            return
        document = parse_html(markup).document
        for node in document.query_selector_all(_FRAMELESS_LINKS).values() if document is not None else ():
            self.pages.append((node.getattr("href"), rel_nofollow(node.getattr("rel"))))


def scan_page(html: bytes | str | HTMLTree, page_url: str, agent: str = "") -> PageScan:
    """Links, resources and robots <meta> directives of a page; `agent`: our product token,
    lower case. A tree passed in is left as it was."""
    document = parse_html(html).document
    found = _Found()
    pages = found.pages
    # One walk of the document for every kind of element (in document order); <a>, most of
    # them, is read here rather than through a call.
    for node in (document.query_selector_all(_selector(agent)).values() if document is not None else ()):
        if node.tag == "a":
            rel = node.getattr("rel")
            pages.append((node.getattr("href"), rel is not None and rel_nofollow(rel)))
        else:
            found.read(node)
    base = page_url
    if found.base is not None:
        try:
            base = normalize_url(found.base, page_url)
        except UrlError:
            pass
    resolve = _Resolver(base)
    resolved = resolve.resolved
    follow: dict[str, None] = {}
    nofollow: dict[str, None] = {}
    for href, unfollowed in pages:
        url = resolved.get(href, _UNSEEN)  # menus repeat links: most hrefs were seen before
        if url is _UNSEEN:
            url = resolve(href)
        if url is not None:
            (nofollow if unfollowed else follow).setdefault(url, None)
    resources = dict.fromkeys(url for url in map(resolve, found.resources) if url is not None and url not in follow)
    return PageScan(list(follow), [u for u in nofollow if u not in follow], meta_directives(found.metas, agent),
                    list(resources), found.noscript_texts)


class _Resolver:
    """href -> normalised http(s) URL against one base, or None when not crawlable; each
    distinct href resolved once (menus repeat links), and an href with a path of its own
    once for every page of the base's directory (see _SHARED)."""

    def __init__(self, base: str):
        self.base = base
        self.resolved: dict[str, str | None] = {}
        scheme_end = base.find("://")
        path_start = base.find("/", scheme_end + 3) if scheme_end > 0 else -1
        # scheme://authority/directory/ of the base (a normalised page URL has its path)
        self.directory = base[:base.rfind("/", 0, len(base.partition("?")[0])) + 1] if path_start > 0 else None

    def __call__(self, href: str | None) -> str | None:
        url = self.resolved.get(href, _UNSEEN)
        if url is _UNSEEN:
            shared = self.directory is not None and href and href[0] in _PATH_STARTS and ":" not in href
            if shared:
                url = _SHARED.get((self.directory, href), _UNSEEN)
            if url is _UNSEEN:
                url = None
                if href and not href.startswith(_SKIPPED):
                    try:
                        url = resolve_href(href, self.base)
                    except UrlError:
                        pass
                if shared:
                    if len(_SHARED) >= _SHARED_MAX:
                        _SHARED.clear()
                    _SHARED[(self.directory, href)] = url
            self.resolved[href] = url
        return url


_selector = functools.lru_cache(maxsize=8)(selector_for)  # a batch has one agent
_UNSEEN = object()
# The pages of one directory share most of their hrefs (menus, their neighbours), so those
# are resolved once per directory, not once per page: an href that names a path and no scheme
# resolves the same against every base with the same scheme, authority and directory (RFC
# 3986 5.2: only "", "?q" and "#f", the base document itself, read the rest of the base).
# It starts with a character of a path (no whitespace, "?" or "#") and holds no ":".
_PATH_STARTS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._~-")
_SHARED: dict[tuple[str, str], str | None] = {}  # (directory, href) -> resolve_href's answer
_SHARED_MAX = 100_000  # entries; emptied when full (a batch's directories come and go)


def extract_links(html: bytes | str, page_url: str) -> list[str]:
    """Distinct normalised http(s) outlinks of the page to follow, in document order."""
    return scan_page(html, page_url).links
