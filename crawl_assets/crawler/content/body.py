"""What a fetched body is: its media type (headers first, sniffing second, never the URL's
extension), its decoded content, digest, outlinks, resources, robots <meta> directives and
signs of being built by scripts (script_signals.py)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from .change_feeds import listing_of
from .decoding import DecodingError, decode_body
from .html_tree import parse_html
from .links import scan_page
from .page_signals import NO_DIRECTIVES, PageDirectives
from .script_signals import ScriptSignals, script_signals
from .simhash import page_text, simhash64
from .volatile_parts import change_digest

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_HTML_STARTS = (b"<!doctype html", b"<html", b"<head", b"<body", b"<!--")
_TEXT_BYTES = bytes(range(32, 256)) + b"\t\n\r\f\x1b"


def looks_binary(sample: bytes) -> bool:
    """NUL bytes, or many control characters, mean this is not text whatever the header says."""
    if not sample:
        return False
    if b"\x00" in sample:
        return True
    controls = len(sample.translate(None, _TEXT_BYTES))
    return controls / len(sample) > 0.05


def media_type_of(content_type: str | None, body: bytes) -> str:
    declared = (content_type or "").split(";", 1)[0].strip().lower()
    sample = body[:1024]
    if declared:
        if declared.startswith("text/") or declared in HTML_TYPES:
            return "application/octet-stream" if looks_binary(sample) else declared
        return declared
    head = sample.lstrip().lower()
    if head.startswith(_HTML_STARTS):
        return "text/html"
    return "application/octet-stream" if looks_binary(sample) else "text/plain"


@dataclass(frozen=True)
class ContentFacts:
    media_type: str
    sha256: str | None
    outlinks: list[str]  # to follow
    simhash: int | None = None  # 64-bit SimHash of an HTML page's main text
    too_large: bool = False  # decoded content passed the size cap (a compression bomb)
    error: str | None = None
    nofollow_links: list[str] = field(default_factory=list)  # linked with rel="nofollow" only
    directives: PageDirectives = NO_DIRECTIVES  # of the page's robots <meta> tags
    resources: list[str] = field(default_factory=list)  # images, scripts, styles it loads: not queued
    script_signals: ScriptSignals | None = None  # an HTML page's signs of being built by scripts
    change_digest: str | None = None  # sha256 less the per-request values (volatile_parts.py)
    dated: list = field(default_factory=list)  # a sitemap's or feed's (url, lastmod) entries with a date
    listing: bool = False  # a sitemap or feed: `outlinks` are the URLs it lists


def examine(body: bytes, content_type: str | None, content_encoding: str | None,
            url: str, limit: int, agent: str = "") -> ContentFacts:
    """Decode the body, hash it, and list its links if it is HTML (anything else is not
    parsed); `agent`: our product token, whose robots <meta> tags apply besides "robots"."""
    try:
        content, too_large = decode_body(body, content_encoding, limit)
    except DecodingError as exc:
        return ContentFacts(media_type_of(content_type, b""), None, [], error=str(exc))
    media_type = media_type_of(content_type, content)
    digest = hashlib.sha256(content).hexdigest()
    if media_type in HTML_TYPES:
        tree = parse_html(content)  # one parse for both: the links first, page_text cuts the tree
        scan = scan_page(tree, url, agent)
        signals = script_signals(tree, len(content), len(scan.links) + len(scan.nofollow_links),
                                 scan.noscript_texts)
        return ContentFacts(media_type, digest, scan.links, simhash64(page_text(tree)), too_large,
                            nofollow_links=scan.nofollow_links, directives=scan.directives,
                            resources=scan.resources, script_signals=signals,
                            change_digest=change_digest(content, is_html=True, sha256=digest))
    listed = listing_of(content, media_type, url, limit)
    # Sitemaps and feeds feed the frontier (change_feeds.py); other XML is not parsed.
    links = list(dict.fromkeys(entry.url for entry in listed[1])) if listed else []
    dated = [(entry.url, entry.lastmod) for entry in listed[1] if entry.lastmod is not None] if listed else []
    return ContentFacts(media_type, digest, links, None, too_large, change_digest=digest, dated=dated,
                        listing=listed is not None)
