"""WARC/1.1 output: one gzip member per record, warcinfo first, then response + request pairs.

What each record carries (WARC 1.1, section 5, and what warcio, FastWARC and pywb read):
every record after the warcinfo names it (WARC-Warcinfo-ID); a response or revisit has the
server's address (WARC-IP-Address), WARC-Truncated "length" when its body was cut at the size
cap, and a revisit its WARC-Profile and, when the earlier capture is known,
WARC-Refers-To-Target-URI and -Date; a request record's block is the request head as the
client sent it, byte for byte ("GET /p HTTP/1.1", headers, blank line), and its
WARC-Concurrent-To is its response's record ID; a conversion refers to the record it was made
from (WARC-Refers-To). The response block is the answer as parsed: status line, headers as
received (Transfer-Encoding renamed, since the body is stored de-chunked), then the body bytes
as received (content-encoding kept). tests/crawler/archive/test_warc_spec.py checks each.

A file is written under "<name>.open" and renamed when closed, so a crash never leaves a
half-written file under a name that looks complete. Files roll over at a size limit.
A checkpoint asks sync() for every file's length once its bytes are on disk (crawler/batches/checkpoint.py
cuts a file back to that length when the batch resumes). A full disk stops the batch
(BatchStopped) and leaves the open file as it is, for the resume to cut back.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import threading
from dataclasses import dataclass
from functools import cached_property
from datetime import datetime, timezone
from pathlib import Path

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from ..crawl_errors import BatchStopped, disk_full_reason
from ..vocabulary import WarcRecordKind

try:  # base64's b32encode is a Python loop; the compiled one gives the same text
    from ..content.bytes_kernel import b32encode
except ImportError:
    def b32encode(data: bytes) -> str:
        return base64.b32encode(data).decode("ascii")

try:  # ISA-L's deflate: on the demo web's pages, level 2 makes files the size of zlib
    # level 3's for far less CPU (compression was the largest cost per page; bench/README.md).
    from isal import isal_zlib as deflate

    GZIP_LEVEL = 2
except ImportError:  # the standard gzip, where ISA-L has no build
    import zlib as deflate

    GZIP_LEVEL = 3

OPEN_SUFFIX = ".open"
# Stored headers describe the stored body: it is already de-chunked, so the header is renamed.
_RENAMED_HEADERS = {"transfer-encoding": "X-Crawler-Transfer-Encoding"}


@dataclass(frozen=True)
class WarcLocation:
    """Where a response record landed: file name, byte offset and length of its gzip member."""

    filename: str
    offset: int
    length: int


IDENTICAL_PAYLOAD = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
SERVER_NOT_MODIFIED = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"


@dataclass(frozen=True)
class Revisit:
    """Write the answer as a revisit record pointing at an earlier capture, not a full copy."""

    profile: str  # IDENTICAL_PAYLOAD or SERVER_NOT_MODIFIED
    refers_to_uri: str | None  # the earlier capture, when known
    refers_to_date: str | None  # its WARC-Date


def payload_digest(body: bytes) -> str:
    """The WARC-Payload-Digest of a body as received, the way warcio writes it."""
    return _sha1_field(hashlib.sha1(body))


def _sha1_field(sha1) -> str:
    """A WARC digest field's value: "sha1:" and the base32 of a SHA-1 hash object's digest."""
    return "sha1:" + b32encode(sha1.digest())


def _record_id() -> str:
    """A WARC-Record-ID: a version-4 UUID, spelt as str(uuid.uuid4()) spells it, from random
    bytes read a page at a time (uuid4 asks the kernel for 16 bytes each time: two calls a page).
    Drawn under a lock: fetch batches may run in threads of one process (a Celery worker of the
    threads pool), and two threads must never draw the same bytes."""
    pool = _ID_POOL
    with _ID_LOCK:
        if pool[1] + 16 > len(pool[0]):
            pool[:] = [os.urandom(_ID_POOL_BYTES), 0]
        raw, at = pool
        pool[1] = at + 16
    value = int.from_bytes(raw[at:at + 16], "big") & _UUID4_CLEAR | _UUID4_SET
    text = f"{value:032x}"
    return f"<urn:uuid:{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}>"


_ID_POOL_BYTES = 4096
_ID_POOL: list = [b"", 0]  # (random bytes, next unused offset)
_ID_LOCK = threading.Lock()


def _fresh_pool_in_child() -> None:
    """A forked child must not reuse its parent's bytes (the same IDs would name two records),
    nor wait on a lock another thread of the parent held at the fork."""
    global _ID_LOCK
    _ID_LOCK = threading.Lock()
    _ID_POOL[:] = [b"", 0]


os.register_at_fork(after_in_child=_fresh_pool_in_child)
# The version (4) and variant (RFC 4122) bits uuid.UUID(version=4) sets.
_UUID4_CLEAR = ~((0xF000 << 64) | (0xC000 << 48)) & ((1 << 128) - 1)
_UUID4_SET = (0x4000 << 64) | (0x8000 << 48)


_EMPTY_DIGEST = payload_digest(b"")
_RESPONSE_TYPE = "application/http; msgtype=response"
_REQUEST_TYPE = "application/http; msgtype=request"


def _record_bytes(fields: list[tuple[str, str]], block: bytes, payload: bytes = b"") -> bytes:
    """One uncompressed WARC/1.1 record: header fields, the block (HTTP head, then payload)."""
    head = "WARC/1.1\r\n" + "".join([f"{name}: {value}\r\n" for name, value in fields]) + "\r\n"
    return b"".join((head.encode("utf-8"), block, payload, b"\r\n\r\n"))  # the payload copied once


def _http_head(first_line: str, headers: list[tuple[str, str]]) -> bytes:
    """An HTTP message head as warcio writes it; ValueError when a header is not ASCII
    (warcio then %-encodes it: the caller leaves such records to warcio)."""
    text = first_line + "\r\n" + "".join([f"{name}: {value}\r\n" for name, value in headers]) + "\r\n"
    return text.encode("ascii")


@dataclass(frozen=True)
class Exchange:
    """One HTTP request and the response to it, as sent and received."""

    url: str
    ip: str
    fetched_at: datetime
    method: str
    request_target: str
    request_headers: list[tuple[str, str]]
    http_version: str
    status: int
    reason: str
    response_headers: list[tuple[str, str]]
    body: bytes  # as received (content-encoding not undone)
    truncated: bool = False  # body cut off at the size cap
    # The request head as sent (request line, headers, blank line): the request record's block.
    # None for an exchange made up elsewhere (a test, a benchmark): then it is written the way
    # the fetch client writes one (clients.request_bytes), HTTP/1.1.
    request_head: bytes | None = None

    def request_block(self) -> bytes:
        if self.request_head is not None:
            return self.request_head
        return _http_head(f"{self.method} {self.request_target} HTTP/1.1", self.request_headers)

    @cached_property
    def record_date(self) -> str:
        """The WARC-Date of its records (formatted once: the capture that archives the
        payload asks for it too)."""
        return warc_date(self.fetched_at)


def stop_if_disk_full(exc: OSError, directory: Path) -> None:
    """A full disk stops the batch at its last checkpoint (BatchStopped); other errors are the caller's."""
    if disk_full_reason(exc):
        raise BatchStopped(f"the disk holding {directory} is full ({exc.strerror}): the fetch batch "
                           "stopped at its last checkpoint; free some space and run it again to resume") from exc


def warc_date(moment: datetime) -> str:
    """"%Y-%m-%dT%H:%M:%S.%fZ" in UTC (isoformat spells it so at half strftime's cost)."""
    return moment.astimezone(timezone.utc).isoformat(timespec="microseconds")[:-6] + "Z"


class WarcFileWriter:
    """Writes exchanges into <directory>/<prefix>-NNNNN.warc.gz, rolling at max_file_bytes."""

    def __init__(self, directory: Path, prefix: str, software: str,
                 max_file_bytes: int = 1 << 30, info: dict[str, str] | None = None):
        self.directory = Path(directory)
        self.prefix = prefix
        self.software = software
        self.max_file_bytes = max_file_bytes
        self.info = info or {}
        self.closed_files: list[Path] = []
        self._closed_lengths: dict[str, int] = {}
        self._serial = 0
        self._file: io.BufferedWriter | None = None
        self._writer: WARCWriter | None = None
        self._name = ""
        self._warcinfo_id = ""  # the open file's warcinfo record, named by each record after it
        self.last_record_id = ""  # WARC-Record-ID of the last response or revisit written

    def _open(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        self._name = f"{self.prefix}-{self._serial:05d}.warc.gz"
        self._serial += 1
        self._file = open(self.directory / (self._name + OPEN_SUFFIX), "wb")
        # warcio serialises each record into a buffer; we gzip it as one member ourselves.
        self._buffer = io.BytesIO()
        self._writer = WARCWriter(self._buffer, gzip=False, warc_version="1.1")
        info = {"software": self.software, "format": "WARC File Format 1.1", **self.info}
        warcinfo = self._writer.create_warcinfo_record(self._name, info)
        self._warcinfo_id = warcinfo.rec_headers.get_header("WARC-Record-ID")
        self._write_member(warcinfo)

    def _record_bytes_of(self, record) -> bytes:
        """A warcio record serialised (uncompressed)."""
        self._buffer.seek(0)
        self._buffer.truncate()
        self._writer.write_record(record)
        return self._buffer.getvalue()

    def _write_member(self, record) -> None:
        """Serialise one warcio record and append it to the file as its own gzip member."""
        self._write_bytes(self._record_bytes_of(record))

    def _write_bytes(self, record: bytes) -> None:
        """Append one serialised record to the file as its own gzip member."""
        compressor = deflate.compressobj(GZIP_LEVEL, deflate.DEFLATED, deflate.MAX_WBITS | 16)
        try:
            self._file.write(compressor.compress(record) + compressor.flush())
        except OSError as exc:
            stop_if_disk_full(exc, self.directory)
            raise

    def write(self, exchange: Exchange, revisit: Revisit | None = None,
              digest: str | None = None) -> WarcLocation:
        """A response (or, given `revisit`, a revisit) record and the request record.
        digest: the body's payload digest when the caller has it already (saves hashing twice)."""
        if self._file is None:
            self._open()
        assert self._writer is not None and self._file is not None
        try:
            response, request = self._serialise(exchange, revisit, digest)
        except UnicodeEncodeError:  # a header that is not ASCII: warcio %-encodes it
            response, request = self._serialise_with_warcio(exchange, revisit, digest)
        offset = self._file.tell()
        self._write_bytes(response)
        length = self._file.tell() - offset
        self._write_bytes(request)
        location = WarcLocation(self._name, offset, length)
        if self._file.tell() >= self.max_file_bytes:
            self._close_current()
        return location

    def write_conversion(self, url: str, refers_to: str, date: str, body: bytes,
                         content_type: str = "text/html; charset=utf-8") -> WarcLocation:
        """A conversion record: `body` made from the response record `refers_to` (a record ID),
        such as the DOM a browser built from a page (crawler/rendering/)."""
        if self._file is None:
            self._open()
        assert self._file is not None
        record = _record_bytes([
            ("WARC-Date", date), ("WARC-Type", WarcRecordKind.CONVERSION), ("WARC-Record-ID", _record_id()),
            ("WARC-Warcinfo-ID", self._warcinfo_id), ("WARC-Target-URI", url), ("WARC-Refers-To", refers_to),
            ("WARC-Payload-Digest", payload_digest(body)), ("WARC-Block-Digest", payload_digest(body)),
            ("Content-Type", content_type), ("Content-Length", str(len(body)))], body)
        offset = self._file.tell()
        self._write_bytes(record)
        location = WarcLocation(self._name, offset, self._file.tell() - offset)
        if self._file.tell() >= self.max_file_bytes:
            self._close_current()
        return location

    def _serialise(self, exchange: Exchange, revisit: Revisit | None, digest: str | None) -> tuple[bytes, bytes]:
        """The response (or revisit) and request records, byte for byte what warcio's
        WARCWriter writes for them (same fields in the same order), without its per-header
        list scans: on the fetch path they were a large part of the cost of archiving a page."""
        date = exchange.record_date
        headers = [(_RENAMED_HEADERS.get(k.lower(), k), v) for k, v in exchange.response_headers]
        status_line = f"{exchange.status} {exchange.reason}".strip()
        http_head = _http_head(f"{exchange.http_version} {status_line}" if status_line else exchange.http_version,
                               headers)
        fields = [("WARC-Date", date), ("WARC-IP-Address", exchange.ip), ("WARC-Warcinfo-ID", self._warcinfo_id)]
        if revisit is None:
            if exchange.truncated:
                fields.append(("WARC-Truncated", "length"))
            if digest:
                fields.append(("WARC-Payload-Digest", digest))
            kind, payload = WarcRecordKind.RESPONSE, exchange.body
        else:
            fields.append(("WARC-Profile", revisit.profile))
            if revisit.refers_to_uri and revisit.refers_to_date:
                fields += [("WARC-Refers-To-Target-URI", revisit.refers_to_uri),
                           ("WARC-Refers-To-Date", revisit.refers_to_date)]
            if revisit.profile == IDENTICAL_PAYLOAD:
                fields.append(("WARC-Payload-Digest", digest or payload_digest(exchange.body)))
            elif digest:  # a 304: the digest of the earlier capture's payload, when known
                fields.append(("WARC-Payload-Digest", digest))
            # Headers only (see _serialise_with_warcio): a 304 revisit has no HTTP block at all.
            kind, payload = WarcRecordKind.REVISIT, b""
            if revisit.profile != IDENTICAL_PAYLOAD:
                http_head = b""
        record_id = self.last_record_id = _record_id()
        fields += [("WARC-Type", kind), ("WARC-Record-ID", record_id), ("WARC-Target-URI", exchange.url)]
        if kind == WarcRecordKind.RESPONSE and not digest:
            fields.append(("WARC-Payload-Digest", payload_digest(payload)))
        block_digest = hashlib.sha1(http_head)
        block_digest.update(payload)
        fields += [("WARC-Block-Digest", _sha1_field(block_digest)),
                   ("Content-Type", _RESPONSE_TYPE), ("Content-Length", str(len(http_head) + len(payload)))]
        return _record_bytes(fields, http_head, payload), self._request_record(exchange, record_id)

    def _request_record(self, exchange: Exchange, response_id: str) -> bytes:
        """The request record: its block is the request head as sent, byte for byte (no
        re-encoding: warcio would %-encode a header that is not ASCII, and its
        StatusAndHeaders, given is_http_request, takes the method for the protocol and drops
        the HTTP version unless handed the whole request line)."""
        block = exchange.request_block()
        return _record_bytes([
            ("WARC-Date", exchange.record_date), ("WARC-IP-Address", exchange.ip),
            ("WARC-Warcinfo-ID", self._warcinfo_id), ("WARC-Concurrent-To", response_id),
            ("WARC-Type", WarcRecordKind.REQUEST), ("WARC-Record-ID", _record_id()),
            ("WARC-Target-URI", exchange.url), ("WARC-Payload-Digest", _EMPTY_DIGEST),
            ("WARC-Block-Digest", payload_digest(block)), ("Content-Type", _REQUEST_TYPE),
            ("Content-Length", str(len(block)))], block)

    def _serialise_with_warcio(self, exchange: Exchange, revisit: Revisit | None,
                               digest: str | None) -> tuple[bytes, bytes]:
        """The same records built by warcio (which %-encodes headers that are not ASCII)."""
        writer = self._writer
        date = exchange.record_date

        headers = [(_RENAMED_HEADERS.get(k.lower(), k), v) for k, v in exchange.response_headers]
        status_line = f"{exchange.status} {exchange.reason}".strip()
        http_headers = StatusAndHeaders(status_line, headers, protocol=exchange.http_version)
        warc_headers = {"WARC-Date": date, "WARC-IP-Address": exchange.ip, "WARC-Warcinfo-ID": self._warcinfo_id}
        if revisit is None:
            if exchange.truncated:
                warc_headers["WARC-Truncated"] = "length"
            if digest:
                warc_headers["WARC-Payload-Digest"] = digest
            response = writer.create_warc_record(
                exchange.url, WarcRecordKind.RESPONSE, payload=io.BytesIO(exchange.body),
                length=len(exchange.body), http_headers=http_headers, warc_headers_dict=warc_headers)
        else:
            warc_headers["WARC-Profile"] = revisit.profile
            if revisit.refers_to_uri and revisit.refers_to_date:
                warc_headers["WARC-Refers-To-Target-URI"] = revisit.refers_to_uri
                warc_headers["WARC-Refers-To-Date"] = revisit.refers_to_date
            if revisit.profile == IDENTICAL_PAYLOAD:
                warc_headers["WARC-Payload-Digest"] = digest or payload_digest(exchange.body)
            elif digest:  # a 304: the digest of the earlier capture's payload, when known
                warc_headers["WARC-Payload-Digest"] = digest
            # Headers only: the payload is the earlier capture's. A 304 revisit has no HTTP
            # block at all: replay tools serve a revisit's own status and headers over the
            # earlier payload, and pywb 2.10 (resolvingloader.py) answers any 3xx revisit,
            # 304 included, with an empty body; without headers it replays the earlier capture.
            response = writer.create_warc_record(
                exchange.url, WarcRecordKind.REVISIT, payload=io.BytesIO(b""), length=0,
                http_headers=http_headers if revisit.profile == IDENTICAL_PAYLOAD else None,
                warc_headers_dict=warc_headers)
        self.last_record_id = response.rec_headers.get_header("WARC-Record-ID")
        return self._record_bytes_of(response), self._request_record(exchange, self.last_record_id)

    def _close_current(self) -> None:
        if self._file is None:
            return
        length = self._flush()
        self._file.close()
        final = self.directory / self._name
        os.replace(self.directory / (self._name + OPEN_SUFFIX), final)
        self.closed_files.append(final)
        self._closed_lengths[self._name] = length
        self._file = self._writer = None

    def _flush(self) -> int:
        try:
            self._file.flush()
            os.fsync(self._file.fileno())
        except OSError as exc:
            stop_if_disk_full(exc, self.directory)
            raise
        return self._file.tell()

    def sync(self) -> dict[str, int]:
        """Every file's name and length with its bytes on disk: the closed ones and the open one."""
        lengths = dict(self._closed_lengths)
        if self._file is not None:
            lengths[self._name] = self._flush()
        return lengths

    def adopt(self, paths: list[Path]) -> None:
        """Closed files of an earlier attempt at this batch (resumed), counted as this writer's."""
        for path in paths:
            self.closed_files.append(Path(path))
            self._closed_lengths[Path(path).name] = Path(path).stat().st_size

    def abandon(self) -> None:
        """Stop without closing: the open file keeps its ".open" name for the resume to cut back."""
        if self._file is not None:
            try:
                self._file.close()
            except OSError:
                pass  # its buffered tail is lost; the checkpoint does not count it
            self._file = self._writer = None

    def close(self) -> list[Path]:
        """Close the current file; returns every file this writer completed."""
        self._close_current()
        return self.closed_files

    def __enter__(self) -> "WarcFileWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
