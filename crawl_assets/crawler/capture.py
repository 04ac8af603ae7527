"""What one answer leaves behind: its WARC records (a response, or a revisit when an earlier
capture holds the payload) and its fetch-log row, with the content's digest, SimHash and
outlinks when it is a page."""

from __future__ import annotations

from .answer_policy import DeadEndRedirect, LeaveHostAlone, Redirect, Verdict, status_class_of
from .content import examine
from .fetch_record import FetchRecord
from .http_exchange import HopResult
from .trap_defences import TrapDefences
from .vocabulary import StatusClass, WarcRecordKind
from .warc import IDENTICAL_PAYLOAD, SERVER_NOT_MODIFIED, Exchange, Revisit, WarcFileWriter, payload_digest, warc_date
from .workbench import FetchTask

PAGE_CLASSES = frozenset({StatusClass.OK, StatusClass.TOO_LARGE})  # answers whose content is examined


class Capture:
    def __init__(self, warc: WarcFileWriter, max_body_bytes: int, traps: TrapDefences,
                 known_payloads: dict[str, tuple[str, str]] | None = None):
        """known_payloads: payload digest -> (URI, WARC-Date) of payloads archived earlier."""
        self.warc = warc
        self.max_body_bytes = max_body_bytes
        self.traps = traps
        self._archived: dict[str, tuple[str, str]] = dict(known_payloads or {})

    def record(self, task: FetchTask, hop: HopResult, verdict: Verdict) -> tuple[FetchRecord, list[str]]:
        """The fetch-log row of this answer, and the outlinks of its content."""
        timing = dict(fetched_at=hop.started_at, ip=hop.ip, attempts=task.attempt,
                      duration_ms=round(hop.elapsed_s * 1000, 3))
        exchange = hop.exchange
        if exchange is None:
            return FetchRecord(task.url, task.host, task.depth, hop.error_class or StatusClass.NETWORK_ERROR,
                               error=hop.error, **timing), []
        digest, revisit = self._revisit_for(task, exchange, hop.truncated)
        location = self.warc.write(exchange, revisit, digest)
        status_class = StatusClass.TOO_LARGE if hop.truncated else status_class_of(exchange.status)
        error = redirect_to = None
        sha256 = simhash = None
        outlinks: list[str] = []
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
                            task.url, self.max_body_bytes)
            sha256, simhash, error, outlinks = facts.sha256, facts.simhash, facts.error, facts.outlinks
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
            outlinks=len(outlinks), **timing)
        return record, outlinks

    def _revisit_for(self, task: FetchTask, exchange: Exchange, truncated: bool) -> tuple[str | None, Revisit | None]:
        """(payload digest, revisit): a 304, or a payload archived before, is written as a
        revisit record, not a copy. The digest is computed for complete 2xx bodies only."""
        if exchange.status == 304:
            # Refer to the record that holds the payload: the URL's own last 200 may itself
            # have been a revisit of another URL's capture, which replay cannot resolve.
            original = self._archived.get(task.last_payload_digest) if task.last_payload_digest else None
            if original is not None:
                return task.last_payload_digest, Revisit(SERVER_NOT_MODIFIED, *original)
            when = warc_date(task.last_captured_at) if task.last_captured_at else None
            return None, Revisit(SERVER_NOT_MODIFIED, task.url if when else None, when)
        if truncated or not 200 <= exchange.status < 300:
            return None, None
        digest = payload_digest(exchange.body)
        earlier = self._archived.get(digest)
        if earlier is not None:
            return digest, Revisit(IDENTICAL_PAYLOAD, *earlier)
        self._archived[digest] = (task.url, warc_date(exchange.fetched_at))
        return digest, None
