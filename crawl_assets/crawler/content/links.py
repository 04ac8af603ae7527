"""Outlinks of an HTML page: href of <a> and <area>, resolved against the page's base, told
apart by whether their rel asks not to follow them; and the page's robots <meta> tags
(page_signals.py says what they mean).

The page is read from the tree html_tree.parse_html builds, the one its main text is then
taken from (one parse a page). The elements come as one list (`values()`): indexing or
iterating resiliparse's element collection one by one runs the selector again for each
element, quadratic in the number of links.
"""

from __future__ import annotations

from typing import NamedTuple

from ..url_policy.urls import UrlError, normalize_url, resolve_href
from .html_tree import HTMLTree, parse_html
from .page_signals import PageDirectives, meta_directives, rel_nofollow

_SKIPPED = ("#", "javascript:", "mailto:", "tel:", "data:")
_SCANNED = "a[href], area[href], base[href], meta[name]"


class PageScan(NamedTuple):
    links: list[str]  # distinct normalised http(s) outlinks to follow, in document order
    nofollow_links: list[str]  # those only linked with rel="nofollow" (or ugc, sponsored)
    directives: PageDirectives  # of the page's <meta name="robots"> (and our agent's name)


def scan_page(html: bytes | str | HTMLTree, page_url: str, agent: str = "") -> PageScan:
    """Links and robots <meta> directives of a page; `agent`: our product token, lower case.
    A tree passed in is left as it was."""
    document = parse_html(html).document
    # One walk of the document for the four kinds of element (in document order), not three.
    anchors, metas, base_tag = [], [], None
    for node in (document.query_selector_all(_SCANNED).values() if document is not None else ()):
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
            base = normalize_url(base_tag.getattr("href") or "", page_url)
        except UrlError:
            pass
    follow: dict[str, None] = {}
    nofollow: dict[str, None] = {}
    resolved: dict[str, str | None] = {}  # href -> URL (None: not crawlable): menus repeat links
    for node in anchors:
        href = node.getattr("href")
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
        (nofollow if rel_nofollow(node.getattr("rel")) else follow).setdefault(url, None)
    pairs = [(m.getattr("name"), m.getattr("content")) for m in metas]
    return PageScan(list(follow), [u for u in nofollow if u not in follow], meta_directives(pairs, agent))


_UNSEEN = object()


def extract_links(html: bytes | str, page_url: str) -> list[str]:
    """Distinct normalised http(s) outlinks of the page to follow, in document order."""
    return scan_page(html, page_url).links
