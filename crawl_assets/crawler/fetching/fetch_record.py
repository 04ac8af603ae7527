"""What a fetch batch returns: one fetch-log row per URL, the links found, the refusals."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

from ..vocabulary import StatusClass, WarcRecordKind
from .admission import Link


@dataclass(frozen=True)
class FetchRecord:
    """One row of the fetch log: the final outcome of one URL in this batch."""

    url: str
    host: str
    depth: int
    status_class: StatusClass
    fetched_at: datetime | None = None
    status: int | None = None
    duration_ms: float = 0.0
    bytes: int = 0
    content_type: str | None = None
    sha256: str | None = None
    etag: str | None = None
    last_modified: str | None = None
    error: str | None = None
    ip: str | None = None
    attempts: int = 0
    redirect_to: str | None = None
    payload_digest: str | None = None  # WARC-Payload-Digest of the body as received
    simhash: int | None = None  # SimHash of an HTML page's main text (unsigned 64-bit)
    warc_type: WarcRecordKind | None = None  # response, or revisit when an earlier capture holds the payload
    refers_to: str | None = None  # the URI a revisit record points at
    warc_file: str | None = None
    warc_offset: int | None = None
    warc_length: int | None = None
    outlinks: int = 0  # links found on the page, followed or not
    # The page's own signals (crawler/content/page_signals.py): noindex = fetched and archived, but not for
    # an index; nofollow = none of its links followed.
    noindex: bool = False
    nofollow: bool = False
    # Rendered in a browser (crawler/rendering/): simhash, change_digest and outlinks are the rendered DOM's.
    rendered: bool = False
    # sha256 less the values that change on every fetch (crawler/content/volatile_parts.py):
    # what change_stats compares under the archive definition of a change.
    change_digest: str | None = None
    # What the answer's Strict-Transport-Security said of its host: True (https from now on),
    # False (max-age=0), None (no header): the crawl's memory of https hosts (url_policy/https_hosts.py).
    hsts: bool | None = None


@dataclass
class BatchOutput:
    records: list[FetchRecord] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)
    dropped: dict[str, Counter] = field(default_factory=dict)  # host -> reason -> URLs not queued
