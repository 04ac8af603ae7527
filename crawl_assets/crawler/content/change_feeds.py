"""What sitemaps and feeds say about a host's pages: the URLs they list and when each last
changed. A sitemaps.org urlset gives <url><loc> with <lastmod>; a sitemap index lists more
sitemaps (its <lastmod> dates a sitemap file, not a page, so it is no change evidence); an
RSS 2.0 <item> gives <link> and <pubDate> (or Dublin Core <dc:date>); an Atom <entry> gives
<link href> (the alternate one) and <updated> (or <published>).

Regular expressions over the bytes, not an XML parser: no entity expansion or external
fetch can happen, a broken document yields what it holds up to the break, and the cost is
one pass (each opening tag's end is looked for once: see _elements). At most MAX_LISTED
entries of one document are read (the sitemaps.org limit).
A gzipped sitemap (sitemap.xml.gz, served as application/gzip) is unpacked first, up to
the body size cap like any Content-Encoding.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from enum import StrEnum
from typing import NamedTuple

from ..url_policy.urls import UrlError, normalize_url
from .decoding import DecodingError, decode_body

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


class _Tag(NamedTuple):
    opening: re.Pattern[bytes]
    closing: re.Pattern[bytes]


def _tag(name: str) -> _Tag:
    """An element's opening and closing tags, with or without a namespace prefix. An opening
    tag's attributes stop at the next '<': `[^>]*` would read to the end of the document from
    every '<name ' left open."""
    return _Tag(re.compile(rb"<(?:[\w.-]+:)?" + name.encode() + rb"(?:\s[^<>]*)?>"),
                re.compile(rb"</(?:[\w.-]+:)?" + name.encode() + rb"\s*>"))


def _elements(tag: _Tag, content: bytes) -> Iterator[bytes]:
    """The content of each `tag` element, in order (what `<x>(.*?)</x>` finds). Each opening
    tag's closing tag is looked for once, and when none follows, none follows a later opening
    tag either: the regular expression would read the rest of the document again from every
    opening tag left unclosed, hours for a few MB of them."""
    position = 0
    while (opening := tag.opening.search(content, position)) is not None:
        closing = tag.closing.search(content, opening.end())
        if closing is None:
            return
        yield content[opening.end():closing.start()]
        position = closing.end()


_ROOTS = ((re.compile(rb"<(?:[\w.-]+:)?urlset[\s>]"), ListKind.SITEMAP),
          (re.compile(rb"<(?:[\w.-]+:)?sitemapindex[\s>]"), ListKind.SITEMAP_INDEX),
          (re.compile(rb"<(?:rss|(?:[\w.-]+:)?RDF)[\s>]"), ListKind.RSS),
          (re.compile(rb"<(?:[\w.-]+:)?feed[\s>]"), ListKind.ATOM))
_BLOCKS = {ListKind.SITEMAP: _tag("url"), ListKind.SITEMAP_INDEX: _tag("sitemap"),
           ListKind.RSS: _tag("item"), ListKind.ATOM: _tag("entry")}
_LOC = _tag("loc")
_LASTMOD = _tag("lastmod")
_RSS_LINK = _tag("link")
_RSS_DATES = (_tag("pubDate"), _tag("date"))
_ATOM_LINK = re.compile(rb"<(?:[\w.-]+:)?link\b([^<>]*)>")
_ATOM_DATES = (_tag("updated"), _tag("published"))
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
    for block in _elements(_BLOCKS[kind], content):
        if len(entries) >= limit:
            break
        entry = _entry(kind, block, base_url)
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


def _first(block: bytes, tags: tuple[_Tag, ...]) -> str | None:
    for tag in tags:
        value = next(_elements(tag, block), None)
        if value is not None:
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
        except (TypeError, ValueError, IndexError, OverflowError):
            return None
    try:  # a zone offset can carry year 1 or 9999 out of range: no date, the entry still lists its URL
        return when.replace(tzinfo=timezone.utc) if when.tzinfo is None else when.astimezone(timezone.utc)
    except OverflowError:
        return None
