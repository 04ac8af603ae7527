"""Capture indexes of WARC files: CDXJ lines as pywb and cdxj-indexer write them, and the
same rows as an Arrow table (for Parquet and DuckDB).

One row per response, revisit, resource or metadata record (not warcinfo, not request, not
application/warc-fields metadata): the records cdxj-indexer indexes by default. A line is

    <SURT key> <14-digit timestamp> {"url", "mime", "status", "digest", "length", "offset", "filename"}

with the JSON exactly as cdxj-indexer 1.5 prints it (same key order, absent values left
out, the digest with its "sha1:" prefix, numbers as strings), sorted like `cdxj-indexer
--sort`, so pywb can binary-search the file and tests can compare the two line for line.
Revisits are "mime": "warc/revisit"; pywb finds their payload through the record's own
WARC-Refers-To-Target-URI/-Date and the digest. The Arrow rows add what analysts join on:
the record type, the revisit profile and what it refers to, the WARC-Date as a timestamp; and
they hold the conversion records too (a rendered page's DOM, crawler/rendering/), which
cdxj-indexer leaves out by default and the CDXJ file therefore does: a conversion's
refers_to_uri and refers_to_date name the capture it was made from (its WARC-Refers-To, a
record of the same file; the render tier dates the DOM as that capture).

Records are read with FastWARC (the slow part of indexing is parsing); offsets and lengths
are those of each record's gzip member, so a reader can seek straight to it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pyarrow as pa
import surt
from fastwarc.warc import ArchiveIterator

from ..vocabulary import WarcRecordKind
from .warc import payload_digest

REVISIT_MIME = "warc/revisit"  # what pywb's index says a revisit's mime is
INDEXED_TYPES = frozenset({"response", "revisit", "resource", "metadata"})  # cdxj-indexer's default
CONVERSION = WarcRecordKind.CONVERSION  # indexed in the Parquet rows only (see the docstring)
WARC_FIELDS = "application/warc-fields"  # metadata of this type is left out, as cdxj-indexer does
CDXJ_SUFFIX = ".cdxj"
PARQUET_SUFFIX = ".parquet"
WARC_SUFFIX = ".warc.gz"

CAPTURES_SCHEMA = pa.schema([
    ("urlkey", pa.string()),  # SURT form of the URL (the CDXJ key)
    ("timestamp", pa.string()),  # 14 digits, UTC (the CDXJ timestamp)
    ("captured_at", pa.timestamp("us", tz="UTC")),  # WARC-Date, full precision
    ("url", pa.string()),
    ("mime", pa.string()),  # HTTP Content-Type without parameters; warc/revisit for revisits
    ("status", pa.int32()),  # HTTP status, when the record has HTTP headers
    ("digest", pa.string()),  # WARC-Payload-Digest ("sha1:<base32>")
    ("length", pa.int64()),  # the record's gzip member: length and offset in the file
    ("offset", pa.int64()),
    ("filename", pa.string()),  # the WARC file's name (it lies in the same folder)
    ("warc_type", pa.string()),  # response, revisit, ...
    ("profile", pa.string()),  # WARC-Profile of a revisit
    ("refers_to_uri", pa.string()),  # a revisit's WARC-Refers-To-Target-URI (a conversion's: its capture's URI)
    ("refers_to_date", pa.timestamp("us", tz="UTC")),  # and its WARC-Refers-To-Date (a conversion's: its capture's)
])


class WarcIndexError(ValueError):
    """A file that cannot be indexed (not a WARC, or damaged)."""


def url_key(url: str) -> str:
    """The SURT key pywb and cdxj-indexer file a URL under."""
    try:
        return surt.surt(url)
    except Exception:  # cdxj-indexer keeps the URL itself when SURT cannot parse it
        return url


def timestamp14(warc_date: str) -> str:
    """'2026-11-28T10:00:00.123456Z' -> '20261128100000' (warcio's iso_date_to_timestamp)."""
    digits = "".join(c for c in warc_date[:19] if c.isdigit())
    assert len(digits) == 14, f"not a WARC-Date: {warc_date!r}"
    return digits


def parse_warc_date(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value.replace("Z", "+00:00")) if value else None


@dataclass(frozen=True)
class IndexedRecord:
    urlkey: str
    timestamp: str
    captured_at: datetime
    url: str
    mime: str | None
    status: int | None
    digest: str | None
    length: int
    offset: int
    filename: str
    warc_type: str
    profile: str | None
    refers_to_uri: str | None
    refers_to_date: datetime | None

    @property
    def in_cdxj(self) -> bool:
        return self.warc_type != CONVERSION

    def cdxj_line(self) -> str:
        """The record's line as cdxj-indexer writes it (without the newline)."""
        fields = {"url": self.url, "mime": self.mime,
                  "status": None if self.status is None else str(self.status),
                  "digest": self.digest, "length": str(self.length), "offset": str(self.offset),
                  "filename": self.filename}
        return f"{self.urlkey} {self.timestamp} {json.dumps({k: v for k, v in fields.items() if v})}"


def _mime_of(content_type: str | None) -> str | None:
    if not content_type:
        return None
    # cdxj-indexer keeps what comes before the first ';' or whitespace
    for i, c in enumerate(content_type):
        if c == ";" or c.isspace():
            return content_type[:i].strip() or None
    return content_type.strip()


def index_warc(path: Path) -> list[IndexedRecord]:
    """The index rows of one WARC file, in file order."""
    filename = path.name
    size = path.stat().st_size
    pending: list[tuple] = []  # (offset, record fields) until the next record's offset is known
    rows: list[IndexedRecord] = []
    captures: dict[str, tuple[str, datetime | None]] = {}  # WARC-Record-ID -> (URI, date) of responses and revisits

    def finish(next_offset: int) -> None:
        for offset, fields in pending:
            rows.append(IndexedRecord(length=next_offset - offset, offset=offset, filename=filename, **fields))
        pending.clear()

    try:
        with open(path, "rb") as stream:
            for record in ArchiveIterator(stream, parse_http=True):
                offset = record.stream_pos
                finish(offset)
                kind = str(record.record_type)
                if kind not in INDEXED_TYPES and kind != CONVERSION:
                    continue
                headers = record.headers
                if kind == "metadata" and headers.get("Content-Type") == WARC_FIELDS:
                    continue
                http = record.http_headers
                url = headers.get("WARC-Target-URI")
                date = headers.get("WARC-Date")
                refers_to = (headers.get("WARC-Refers-To-Target-URI"), parse_warc_date(headers.get("WARC-Refers-To-Date")))
                if kind in (WarcRecordKind.RESPONSE, WarcRecordKind.REVISIT):
                    captures[headers.get("WARC-Record-ID")] = (url, parse_warc_date(date))
                elif kind == CONVERSION:
                    refers_to = captures.get(headers.get("WARC-Refers-To"), (None, None))
                if kind == WarcRecordKind.REVISIT:
                    mime = REVISIT_MIME
                elif kind == WarcRecordKind.RESPONSE:
                    mime = _mime_of(http.get("Content-Type") if http is not None else None)
                else:
                    mime = _mime_of(headers.get("Content-Type"))
                status = http.status_code if http is not None and kind in ("response", "revisit") else None
                digest = headers.get("WARC-Payload-Digest")
                if digest is None and kind != WarcRecordKind.REVISIT:  # computed as warcio does
                    digest = payload_digest(record.reader.read())
                pending.append((offset, dict(
                    urlkey=url_key(url), timestamp=timestamp14(date), captured_at=parse_warc_date(date),
                    url=url, mime=mime, status=status or None, digest=digest, warc_type=kind,
                    profile=headers.get("WARC-Profile"), refers_to_uri=refers_to[0], refers_to_date=refers_to[1])))
    except (OSError, ValueError) as exc:
        raise WarcIndexError(f"{path}: cannot be indexed ({exc})") from exc
    finish(size)
    return rows


def sorted_records(records: list[IndexedRecord]) -> list[tuple[str, IndexedRecord]]:
    """(line, record) pairs in `cdxj-indexer --sort` order: by the whole line's text."""
    return sorted(((r.cdxj_line(), r) for r in records), key=lambda pair: pair[0])


def captures_table(records: list[IndexedRecord]) -> pa.Table:
    columns = {name: [getattr(r, name) for r in records] for name in CAPTURES_SCHEMA.names}
    return pa.table(columns, schema=CAPTURES_SCHEMA)


def index_paths(warc: Path) -> tuple[Path, Path]:
    """Where a WARC file's CDXJ and Parquet indexes lie: beside it, named after it."""
    assert warc.name.endswith(WARC_SUFFIX), warc
    stem = warc.name[: -len(WARC_SUFFIX)]
    return warc.with_name(stem + CDXJ_SUFFIX), warc.with_name(stem + PARQUET_SUFFIX)


def write_index(warc: Path) -> int:
    """Write <name>.cdxj and <name>.parquet beside one WARC file (each under a temporary name,
    then renamed, so a reader never sees half an index); returns the number of Parquet rows
    (the CDXJ lines and the conversion records)."""
    import pyarrow.parquet as pq

    pairs = sorted_records(index_warc(warc))
    cdxj, parquet = index_paths(warc)
    tmp = cdxj.with_name(cdxj.name + ".tmp")
    tmp.write_text("".join(line + "\n" for line, record in pairs if record.in_cdxj), encoding="utf-8")
    os.replace(tmp, cdxj)
    tmp = parquet.with_name(parquet.name + ".tmp")
    pq.write_table(captures_table([r for _, r in pairs]), tmp)
    os.replace(tmp, parquet)
    return len(pairs)
