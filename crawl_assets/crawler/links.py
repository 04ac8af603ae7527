"""Outlinks of an HTML page: href of <a> and <area>, resolved against the page's base.

selectolax's lexbor parser: fast, and its attribute access does not slow down with the
number of links (resiliparse's element collections do).
"""

from __future__ import annotations

from selectolax.lexbor import LexborHTMLParser

from .urls import UrlError, normalize_url, resolve_href


def extract_links(html: bytes | str, page_url: str) -> list[str]:
    """Distinct normalised http(s) outlinks of the page, in document order."""
    tree = LexborHTMLParser(html)
    base = page_url
    base_tag = tree.css_first("base[href]")
    if base_tag is not None:
        try:
            base = normalize_url(base_tag.attributes.get("href") or "", page_url)
        except UrlError:
            pass
    seen: dict[str, None] = {}
    for node in tree.css("a[href], area[href]"):
        href = node.attributes.get("href")
        if not href or href.startswith(("#", "javascript:", "mailto:", "tel:", "data:")):
            continue
        try:
            seen.setdefault(resolve_href(href, base), None)
        except UrlError:
            continue
    return list(seen)
