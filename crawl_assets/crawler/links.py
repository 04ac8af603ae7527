"""Outlinks of an HTML page: href of <a> and <area>, resolved against the page's base, told
apart by whether their rel asks not to follow them; and the page's robots <meta> tags
(page_signals.py says what they mean).

selectolax's lexbor parser: fast, and its attribute access does not slow down with the
number of links (resiliparse's element collections do).
"""

from __future__ import annotations

from typing import NamedTuple

from selectolax.lexbor import LexborHTMLParser

from .page_signals import PageDirectives, meta_directives, rel_nofollow
from .urls import UrlError, normalize_url, resolve_href

_SKIPPED = ("#", "javascript:", "mailto:", "tel:", "data:")


class PageScan(NamedTuple):
    links: list[str]  # distinct normalised http(s) outlinks to follow, in document order
    nofollow_links: list[str]  # those only linked with rel="nofollow" (or ugc, sponsored)
    directives: PageDirectives  # of the page's <meta name="robots"> (and our agent's name)


def scan_page(html: bytes | str, page_url: str, agent: str = "") -> PageScan:
    """Links and robots <meta> directives of a page; `agent`: our product token, lower case."""
    tree = LexborHTMLParser(html)
    # One walk of the document for the four kinds of element (in document order), not three.
    anchors, metas, base_tag = [], [], None
    for node in tree.css("a[href], area[href], base[href], meta[name]"):
        tag = node.tag
        if tag == "meta":
            metas.append(node)
        elif tag == "base":
            if base_tag is None:  # the first <base href> counts, wherever the links are
                base_tag = node
        else:
            anchors.append(node)
    base = page_url
    if base_tag is not None:
        try:
            base = normalize_url(base_tag.attributes.get("href") or "", page_url)
        except UrlError:
            pass
    follow: dict[str, None] = {}
    nofollow: dict[str, None] = {}
    resolved: dict[str, str | None] = {}  # href -> URL (None: not crawlable): menus repeat links
    for node in anchors:
        attributes = node.attributes
        href = attributes.get("href")
        if not href or href.startswith(_SKIPPED):
            continue
        url = resolved.get(href, _UNSEEN)
        if url is _UNSEEN:
            try:
                url = resolve_href(href, base)
            except UrlError:
                url = None
            resolved[href] = url
        if url is None:
            continue
        (nofollow if rel_nofollow(attributes.get("rel")) else follow).setdefault(url, None)
    pairs = [(m.attributes.get("name"), m.attributes.get("content")) for m in metas]
    return PageScan(list(follow), [u for u in nofollow if u not in follow], meta_directives(pairs, agent))


_UNSEEN = object()


def extract_links(html: bytes | str, page_url: str) -> list[str]:
    """Distinct normalised http(s) outlinks of the page to follow, in document order."""
    return scan_page(html, page_url).links
