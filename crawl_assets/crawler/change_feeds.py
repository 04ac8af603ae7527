"""What sitemaps and feeds say about a host's pages: the URLs they list and when each last
changed. A sitemaps.org urlset gives <url><loc> with <lastmod>; a sitemap index lists more
sitemaps (its <lastmod> dates a sitemap file, not a page, so it is no change evidence); an
RSS 2.0 <item> gives <link> and <pubDate> (or Dublin Core <dc:date>); an Atom <entry> gives
<link href> (the alternate one) and <updated> (or <published>).

Regular expressions over the bytes, not an XML parser: no entity expansion or external
fetch can happen, a broken document yields what it holds up to the break, and the cost is
one pass. At most MAX_LISTED entries of one document are read (the sitemaps.org limit).
A gzipped sitemap (sitemap.xml.gz, served as application/gzip) is unpacked first, up to
the body size cap like any Content-Encoding.
"""

from __future__ import annotations

import html
import re
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from enum import StrEnum
from typing import NamedTuple

from .decoding import DecodingError, decode_body
from .urls import UrlError, normalize_url

MAX_LISTED = 50_000  # URLs one sitemap may list (sitemaps.org); feeds hold far fewer
FEED_TYPES = frozenset({"application/rss+xml", "application/atom+xml", "application/rdf+xml"})
XML_TYPES = frozenset({"application/xml", "text/xml"})
GZIP_TYPES = frozenset({"application/gzip", "application/x-gzip"})
LISTING_TYPES = XML_TYPES | FEED_TYPES | GZIP_TYPES  # media types that may hold a sitemap or feed


class ListKind(StrEnum):
    """What kind of document listed a URL (change_evidence.source_kind)."""

    SITEMAP = "sitemap"
    SITEMAP_INDEX = "sitemap_index"
    RSS = "rss"
    ATOM = "atom"


class Listed(NamedTuple):
    url: str  # normalised
    lastmod: datetime | None  # UTC; None when absent or unreadable


def _tag(name: str) -> bytes:
    """An element's content, with or without a namespace prefix (non-greedy, across lines)."""
    return rb"<(?:[\w.-]+:)?" + name.encode() + rb"(?:\s[^>]*)?>(.*?)</(?:[\w.-]+:)?" + name.encode() + rb"\s*>"


_ROOTS = ((re.compile(rb"<(?:[\w.-]+:)?urlset[\s>]"), ListKind.SITEMAP),
          (re.compile(rb"<(?:[\w.-]+:)?sitemapindex[\s>]"), ListKind.SITEMAP_INDEX),
          (re.compile(rb"<(?:rss|(?:[\w.-]+:)?RDF)[\s>]"), ListKind.RSS),
          (re.compile(rb"<(?:[\w.-]+:)?feed[\s>]"), ListKind.ATOM))
_BLOCKS = {ListKind.SITEMAP: re.compile(_tag("url"), re.S), ListKind.SITEMAP_INDEX: re.compile(_tag("sitemap"), re.S),
           ListKind.RSS: re.compile(_tag("item"), re.S), ListKind.ATOM: re.compile(_tag("entry"), re.S)}
_LOC = re.compile(_tag("loc"), re.S)
_LASTMOD = re.compile(_tag("lastmod"), re.S)
_RSS_LINK = re.compile(_tag("link"), re.S)
_RSS_DATES = (re.compile(_tag("pubDate"), re.S), re.compile(_tag("date"), re.S))
_ATOM_LINK = re.compile(rb"<(?:[\w.-]+:)?link\b([^>]*)>")
_ATOM_DATES = (re.compile(_tag("updated"), re.S), re.compile(_tag("published"), re.S))
_ATTR = re.compile(rb"""([\w:-]+)\s*=\s*(?:"([^"]*)"|'([^']*)')""")
_CDATA = re.compile(rb"^\s*<!\[CDATA\[(.*?)\]\]>\s*$", re.S)


def list_kind(content: bytes) -> ListKind | None:
    """The kind of sitemap or feed `content` is, judged by its root element; None if neither."""
    head = content[:4096]
    for pattern, kind in _ROOTS:
        if pattern.search(head):
            return kind
    return None


def listing_of(content: bytes, media_type: str, base_url: str,
               max_bytes: int) -> tuple[ListKind, list[Listed]] | None:
    """listed_urls of a decoded body of `media_type`, unpacking a gzipped one (at most
    `max_bytes`); None if it is no sitemap or feed."""
    if media_type not in LISTING_TYPES:
        return None
    if media_type in GZIP_TYPES:
        try:  # the head first: any other gzipped download is not unpacked whole
            if list_kind(decode_body(content, "gzip", 4096)[0]) is None:
                return None
            content = decode_body(content, "gzip", max_bytes)[0]
        except DecodingError:
            return None
    return listed_urls(content, base_url)


def listed_urls(content: bytes, base_url: str, limit: int = MAX_LISTED) -> tuple[ListKind, list[Listed]] | None:
    """The URLs a sitemap or feed lists, with their last change; None if it is neither."""
    kind = list_kind(content)
    if kind is None:
        return None
    entries: list[Listed] = []
    for block in _BLOCKS[kind].finditer(content):
        if len(entries) >= limit:
            break
        entry = _entry(kind, block.group(1), base_url)
        if entry is not None:
            entries.append(entry)
    return kind, entries


def _entry(kind: ListKind, block: bytes, base_url: str) -> Listed | None:
    if kind is ListKind.ATOM:
        href, when = _atom_link(block), _first(block, _ATOM_DATES)
    elif kind is ListKind.RSS:
        href, when = _first(block, (_RSS_LINK,)), _first(block, _RSS_DATES)
    else:
        href, when = _first(block, (_LOC,)), _first(block, (_LASTMOD,))
    if not href:
        return None
    try:
        url = normalize_url(href, base_url)
    except UrlError:
        return None
    return Listed(url, None if kind is ListKind.SITEMAP_INDEX else parse_when(when))


def _first(block: bytes, patterns) -> str | None:
    for pattern in patterns:
        match = pattern.search(block)
        if match:
            value = match.group(1)
            cdata = _CDATA.match(value)
            return html.unescape((cdata.group(1) if cdata else value).decode("utf-8", "replace")).strip()
    return None


def _atom_link(block: bytes) -> str | None:
    """The href of the entry's alternate link (a link without rel is alternate)."""
    for match in _ATOM_LINK.finditer(block):
        attrs = {m.group(1).lower(): (m.group(2) if m.group(2) is not None else m.group(3))
                 for m in _ATTR.finditer(match.group(1))}
        if attrs.get(b"rel", b"alternate").strip().lower() == b"alternate" and attrs.get(b"href"):
            return html.unescape(attrs[b"href"].decode("utf-8", "replace")).strip()
    return None


def parse_when(text: str | None) -> datetime | None:
    """A W3C/RFC 3339 date-time (sitemaps, Atom) or an RFC 822 date (RSS), as UTC; a date
    or a time without a zone counts as UTC; None if unreadable."""
    if not text:
        return None
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
    return when.replace(tzinfo=timezone.utc) if when.tzinfo is None else when.astimezone(timezone.utc)
