"""Where an HTML page names other URLs, and which of them are pages and which are resources:
the rules links.py applies, each written here once.

Pages, queued for the crawl (the elements Heritrix's ExtractorHTML reads as links):
- `<a href>` and `<area href>` (an image map's areas), `<frame src>` and `<iframe src>`,
  and the `<a>`/`<area>` inside `<noframes>` (the frameless version of a frameset page);
- `<link href>` whose rel names another page of the same work: alternate (other languages,
  formats and feeds), next, prev, and canonical. Canonical is queued like the others: it is
  the site's own word for the page's preferred URL, one URL a page at most, and every trap
  defence still applies to it; it is not (yet) used to merge duplicates;
- `<meta http-equiv="refresh" content="N; url=...">`, read the way browsers read it (the
  HTML standard's declarative-refresh steps: a number first, then the URL).
All of them resolve against the page's first `<base href>` (HTML: the first base element
with an href sets the document's base URL, wherever it stands).

Resources, recorded but not queued: what a browser loads to show the page - `<img src/srcset>`,
`<source src/srcset>`, `<script src>`, `<video src/poster>`, `<audio src>`, `<track src>`,
`<embed src>`, `<object data>`, `<input type=image src>`, and `<link>` with rel stylesheet,
icon, preload, modulepreload, prefetch or manifest. They are kept for the render tier, which
loads them through the crawler's own fetch path; a page is never found through them.

Not read: other `<link>` rels (author, license, search, pingback, dns-prefetch, ...: no page
of the site, or no page at all), form actions (queries a crawler would make up), URLs in
scripts, styles and comments (Heritrix guesses at these; a plain parse does not run scripts,
detecting script-built pages is the render tier's), `<template>` contents.
"""

from __future__ import annotations

import re

from .page_signals import EVERY_CRAWLER

# element -> the attribute that holds the URL of a page it links
PAGE_ATTRIBUTES: dict[str, str] = {"a": "href", "area": "href", "frame": "src", "iframe": "src"}
# element -> the attributes that hold URLs of resources it loads
RESOURCE_ATTRIBUTES: dict[str, tuple[str, ...]] = {
    "img": ("src", "srcset"), "source": ("src", "srcset"), "script": ("src",), "video": ("src", "poster"),
    "audio": ("src",), "track": ("src",), "embed": ("src",), "object": ("data",), "input": ("src",),
}
SRCSET = "srcset"  # a list of candidates, not one URL
PAGE_RELS = frozenset({"alternate", "next", "prev", "canonical"})
# Checked first: rel="alternate stylesheet" is a stylesheet.
RESOURCE_RELS = frozenset({"stylesheet", "icon", "apple-touch-icon", "preload", "modulepreload", "prefetch",
                           "manifest"})
FRAMELESS = "noframes"  # its content is text to the HTML parser: links.py parses it again
# Not a link source: met in the same walk for script_signals.py (whether a <noscript> asks for
# JavaScript), which then walks the document no second time.
NOSCRIPT = "noscript"

# One selector for every element read, so the document is walked once. It names attributes,
# not elements: lexbor tries each alternative on every element, and five attribute tests cost
# no more than the old four (a[href], area[href], base[href], meta[name]) where twenty
# element[attribute] pairs cost 15 % more; links.py skips the other elements it matches.
# <meta> only with the attributes links.py reads: each element found costs a Python wrapper
# (about 3 us), and most pages carry charset, viewport or property <meta> tags besides.
_URL_ATTRIBUTES = sorted({"href", *PAGE_ATTRIBUTES.values(), *(a for names in RESOURCE_ATTRIBUTES.values() for a in names)})
SELECTOR = ", ".join([*(f"[{attribute}]" for attribute in _URL_ATTRIBUTES), "meta[name]", "meta[http-equiv]",
                      FRAMELESS, NOSCRIPT])
_PLAIN_TOKEN = frozenset("abcdefghijlmnopqrstuvwxyz0123456789-_.")  # no "k": see selector_for


def selector_for(agent: str) -> str:
    """SELECTOR with only the named <meta> tags whose name can be "robots" or `agent` (our
    product token, lower case) once stripped and lowered (page_signals.meta_directives): the
    others (description, viewport, generator, theme-color...) would each cost a wrapper for
    nothing. A name contains its value case-insensitively, so `*= i` finds every one of them.
    Only ASCII letters lower to ASCII ones, but for the Kelvin sign (a "k"), so an agent with
    a "k", or anything but letters, digits, "-", "_" and ".", keeps every named <meta>."""
    if not agent or not _PLAIN_TOKEN.issuperset(agent):
        return SELECTOR
    return SELECTOR.replace("meta[name]", f'meta[name*="{EVERY_CRAWLER}" i], meta[name*="{agent}" i]')


def link_kind(rel: str | None) -> str | None:
    """'page' or 'resource' for a <link> with this rel, or None when it is neither."""
    words = set((rel or "").lower().split())
    if not words.isdisjoint(RESOURCE_RELS):
        return "resource"
    if not words.isdisjoint(PAGE_RELS):
        return "page"
    return None


_WHITESPACE = "\t\n\f\r "
# The HTML standard's declarative refresh: digits (or a dot), more digits and dots, then
# the end, or whitespace, ";" or "," before the URL part.
_REFRESH_TIME = re.compile(r"[\t\n\f\r ]*(?:\d|(?=\.))[\d.]*(?=$|[;,\t\n\f\r ])")
_URL_LABEL = re.compile(r"url[\t\n\f\r ]*=[\t\n\f\r ]*", re.IGNORECASE)


def refresh_target(content: str | None) -> str | None:
    """The URL of a <meta http-equiv="refresh"> content ("5; url='/next.html'"), or None when
    it names none (a reload of the page itself) or is not a refresh a browser would follow."""
    timing = _REFRESH_TIME.match(content or "")
    if timing is None:
        return None
    rest = content[timing.end():].lstrip(_WHITESPACE)
    if rest[:1] in (";", ","):
        rest = rest[1:].lstrip(_WHITESPACE)
    label = _URL_LABEL.match(rest)
    if label is not None:
        rest = rest[label.end():]
    if rest[:1] in ("'", '"'):
        rest = rest[1:].partition(rest[0])[0]
    return rest.strip(_WHITESPACE) or None


# A srcset candidate: the URL (no whitespace; a trailing comma ends it), then its descriptors
# up to the next comma. A data: URL's own commas stay inside the URL.
_SRCSET_CANDIDATE = re.compile(r"[\t\n\f\r ,]*([^\t\n\f\r ]*[^\t\n\f\r ,])(?:[\t\n\f\r ]+[^,]*)?")


def srcset_urls(value: str) -> list[str]:
    """The URLs of a srcset attribute ("a.png 1x, b.png 2x" -> a.png, b.png)."""
    return _SRCSET_CANDIDATE.findall(value)
