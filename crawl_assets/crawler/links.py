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
    base = page_url
    base_tag = tree.css_first("base[href]")
    if base_tag is not None:
        try:
            base = normalize_url(base_tag.attributes.get("href") or "", page_url)
        except UrlError:
            pass
    follow: dict[str, None] = {}
    nofollow: dict[str, None] = {}
    for node in tree.css("a[href], area[href]"):
        attributes = node.attributes
        href = attributes.get("href")
        if not href or href.startswith(_SKIPPED):
            continue
        try:
            url = resolve_href(href, base)
        except UrlError:
            continue
        (nofollow if rel_nofollow(attributes.get("rel")) else follow).setdefault(url, None)
    metas = [(m.attributes.get("name"), m.attributes.get("content")) for m in tree.css("meta[name]")]
    return PageScan(list(follow), [u for u in nofollow if u not in follow], meta_directives(metas, agent))


def extract_links(html: bytes | str, page_url: str) -> list[str]:
    """Distinct normalised http(s) outlinks of the page to follow, in document order."""
    return scan_page(html, page_url).links
