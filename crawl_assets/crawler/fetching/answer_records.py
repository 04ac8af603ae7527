"""What one answer leaves behind: its WARC records (a response, or a revisit when an earlier
capture holds the payload) and its fetch-log row, with the content's digest, SimHash,
outlinks and the page's own robots signals (crawler/content/page_signals.py) when it is a page."""

from __future__ import annotations

from datetime import datetime
from collections.abc import Mapping
from typing import NamedTuple

from ..archive.warc import (
    IDENTICAL_PAYLOAD, SERVER_NOT_MODIFIED, Exchange, Revisit, WarcFileWriter, payload_digest, warc_date,
)
from ..content.body import examine
from ..content.page_signals import PageDirectives, header_directives
from ..url_policy.trap_defences import TrapDefences
from ..vocabulary import DropReason, StatusClass, WarcRecordKind
from .answer_policy import DeadEndRedirect, LeaveHostAlone, Redirect, Verdict, status_class_of
from .fetch_record import FetchRecord
from .http_exchange import HopResult
from .workbench import FetchTask

PAGE_CLASSES = frozenset({StatusClass.OK, StatusClass.TOO_LARGE})  # answers whose content is examined


class FoundLinks(NamedTuple):
    """The outlinks of an answer: those to follow, and those reported but not followed."""

    follow: list[str]
    unfollowed: list[str] = []
    reason: DropReason | None = None  # why `unfollowed` are not: PAGE_NOFOLLOW or NOFOLLOW_LINK
    dated: list = []  # a sitemap's or feed's (url, lastmod) entries (dated_refresh.py)
    listed: bool = False  # `follow` is a sitemap's or feed's list: the host's own pages, not links it grew


NO_LINKS = FoundLinks([])


def found_links(follow: list[str], nofollow: list[str], page_nofollow: bool) -> FoundLinks:
    """A page's links as followed and not (the page's nofollow leaves all of them)."""
    if page_nofollow:
        return FoundLinks([], follow + nofollow, DropReason.PAGE_NOFOLLOW)
    if nofollow:
        return FoundLinks(follow, nofollow, DropReason.NOFOLLOW_LINK)
    return FoundLinks(follow)


class AnswerRecorder:
    def __init__(self, warc: WarcFileWriter, max_body_bytes: int, traps: TrapDefences,
                 known_payloads: Mapping[str, tuple[str, str]] | None = None, agent: str = ""):
        """known_payloads: payload digest -> (URI, WARC-Date) of payloads archived earlier, read
        as it is (an index on disk, pipeline/archive/payload_index.py: never copied into memory).
        agent: our product token (lower case), whose robots <meta>/X-Robots-Tag rules apply."""
        self.agent = agent
        self.warc = warc
        self.max_body_bytes = max_body_bytes
        self.traps = traps
        self._known: Mapping[str, tuple[str, str]] = known_payloads if known_payloads is not None else {}
        self._archived: dict[str, tuple[str, str]] = {}  # payloads this batch archived in full
        # The render tier (crawler/rendering/) sets keep_pages(host, script_signals): the pages it
        # says yes to are kept for the browser, URL -> (answer, its response record's ID, its row).
        self.keep_pages = None
        self.kept: dict[str, tuple[HopResult, str, FetchRecord]] = {}

    def record(self, task: FetchTask, hop: HopResult, verdict: Verdict) -> tuple[FetchRecord, FoundLinks]:
        """The fetch-log row of this answer, and the outlinks of its content."""
        timing = dict(fetched_at=hop.started_at, ip=hop.ip, attempts=task.attempt,
                      duration_ms=round(hop.elapsed_s * 1000, 3))
        exchange = hop.exchange
        if exchange is None:
            return FetchRecord(task.url, task.host, task.depth, hop.error_class or StatusClass.NETWORK_ERROR,
                               error=hop.error, **timing), NO_LINKS
        digest, revisit = self._revisit_for(task, exchange, hop.truncated)
        location = self.warc.write(exchange, revisit, digest)
        status_class = StatusClass.TOO_LARGE if hop.truncated else status_class_of(exchange.status, hop.header("retry-after"))
        error = redirect_to = None
        sha256 = simhash = stable = None
        found = NO_LINKS
        directives = PageDirectives()
        keep = False
        if isinstance(verdict, Redirect):
            redirect_to = verdict.target
        elif isinstance(verdict, DeadEndRedirect):
            redirect_to, error = verdict.target, verdict.error
            status_class = verdict.status_class
        elif isinstance(verdict, LeaveHostAlone):
            error = verdict.error
        elif status_class in PAGE_CLASSES:
            self.traps.observe_fetch(task.host)
            facts = examine(exchange.body, hop.header("content-type"), hop.header("content-encoding"),
                            task.url, self.max_body_bytes, self.agent)
            sha256, simhash, error, stable = facts.sha256, facts.simhash, facts.error, facts.change_digest
            directives = facts.directives
            if hop.header("x-robots-tag") is not None:  # each header line read on its own
                directives |= header_directives((v for k, v in exchange.response_headers
                                                 if k.lower() == "x-robots-tag"), self.agent)
            found = self._links(facts.outlinks, facts.nofollow_links, directives.nofollow)
            if facts.listing:
                found = found._replace(dated=facts.dated, listed=True)
            # A revisit of an identical payload is kept too: the shell is the same, what its
            # scripts load may not be (a 304 carries no body and is not a page here).
            keep = self.keep_pages is not None and self.keep_pages(task.host, facts.script_signals)
            if facts.too_large:
                status_class, error = StatusClass.TOO_LARGE, "decoded body is larger than the size cap"
        record = FetchRecord(
            task.url, task.host, task.depth, status_class, status=exchange.status,
            bytes=len(exchange.body), content_type=hop.header("content-type"), sha256=sha256,
            etag=hop.header("etag"), last_modified=hop.header("last-modified"), error=error,
            redirect_to=redirect_to, payload_digest=digest, simhash=simhash,
            warc_type=WarcRecordKind.REVISIT if revisit else WarcRecordKind.RESPONSE,
            refers_to=revisit.refers_to_uri if revisit else None,
            warc_file=location.filename, warc_offset=location.offset, warc_length=location.length,
            outlinks=len(found.follow) + len(found.unfollowed), noindex=directives.noindex,
            nofollow=directives.nofollow, change_digest=stable, **timing)
        if keep and status_class == StatusClass.OK:
            self.kept[task.url] = (hop, self.warc.last_record_id, record)  # the record just written
        return record, found

    def archive(self, exchange: Exchange, truncated: bool, earlier_digest: str | None = None,
                earlier_at: datetime | None = None) -> str | None:
        """Write an exchange made outside the engine (the browser's, crawler/rendering/) as
        record() writes a page's: a payload archived before as a revisit, a 304 as a revisit of
        the answer it confirms (earlier_digest, earlier_at); returns the payload digest."""
        task = FetchTask(exchange.url, "", last_captured_at=earlier_at, last_payload_digest=earlier_digest)
        digest, revisit = self._revisit_for(task, exchange, truncated)
        self.warc.write(exchange, revisit, digest)
        return digest

    @staticmethod
    def _links(follow: list[str], nofollow: list[str], page_nofollow: bool) -> FoundLinks:
        return found_links(follow, nofollow, page_nofollow)

    def _revisit_for(self, task: FetchTask, exchange: Exchange, truncated: bool) -> tuple[str | None, Revisit | None]:
        """(payload digest, revisit): a 304, or a payload archived before, is written as a
        revisit record, not a copy. The digest is computed for complete 2xx bodies only."""
        if exchange.status == 304:
            # Refer to the record that holds the payload: the URL's own last 200 may itself
            # have been a revisit of another URL's capture, which replay cannot resolve.
            original = self._original(task.last_payload_digest) if task.last_payload_digest else None
            if original is not None:
                return task.last_payload_digest, Revisit(SERVER_NOT_MODIFIED, *original)
            when = warc_date(task.last_captured_at) if task.last_captured_at else None
            return None, Revisit(SERVER_NOT_MODIFIED, task.url if when else None, when)
        if truncated or not 200 <= exchange.status < 300:
            return None, None
        digest = payload_digest(exchange.body)
        earlier = self._original(digest)
        if earlier is not None:
            return digest, Revisit(IDENTICAL_PAYLOAD, *earlier)
        self._archived[digest] = (task.url, exchange.record_date)
        return digest, None

    def _original(self, digest: str) -> tuple[str, str] | None:
        """(URI, WARC-Date) of the record holding this payload in full: this batch's, or an earlier one's."""
        return self._archived.get(digest) or self._known.get(digest)
