"""Capture look-ups without scanning: find a URL's captures in the catalog's `captures` view
(the WARC files' Parquet indexes), then read one record by seeking to its offset.

    python -m crawl_assets.analyst.captures list URL
    python -m crawl_assets.analyst.captures show URL [--date D] [--headers-only] [--shell]
    python -m crawl_assets.analyst.captures export "SELECT * FROM captures WHERE ..." OUT.warc.gz

Every command takes --catalog PATH (default: the catalog of the current settings,
data/crawl.duckdb, or else the demo's: catalog_location.py). From Python: `Captures(catalog).captures_of(url)`, `.capture(url, date)`,
`.export(query, out_path)`.

`list` flags a capture whose WARC file is shorter than its index says (cut short after its
batch wrote it) or missing, prints what to do on stderr and exits with status 1. `show` and
`export` check every record they read (all of its bytes there, its block as long as its
Content-Length and matching its block digest, crawler/archive/warc_reading.py): a damaged one is
named with what to do, on stderr, and the command exits with status 1 (2: a look-up that
cannot be answered, such as a URL never captured).

A URL is looked up by its SURT key, as pywb does (so http/https and a leading www. find the
same captures); when some captures have exactly the URL given, only those are returned.
A revisit is resolved to the record that holds its payload: by digest and the WARC-Refers-To
fields; a 304 revisit (no HTTP headers of its own) is served with the earlier capture's
status and headers, an identical-payload revisit with its own.

A rendered page (the render tier ran its scripts: crawler/rendering/) has the DOM the browser
built from a capture in a `conversion` record beside it. `list` shows it under its capture,
`show` prints the DOM and says so (`--shell` prints the HTML as the server sent it), and
`export` writes a selected capture's DOM with it, and a selected DOM's capture with it.
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import os
import re
import sys
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, timezone
from pathlib import Path

import duckdb
from warcio.archiveiterator import ArchiveIterator
from warcio.warcwriter import WARCWriter

from ..crawler.archive.warc import OPEN_SUFFIX, warc_date
from ..crawler.archive.warc_index import url_key
from ..crawler.archive.warc_reading import DamagedRecord, check_member, read_member
from ..crawler.crawl_errors import CrawlInputError
from ..crawler.vocabulary import WarcRecordKind
from ..pipeline.catalog_step import rebuilt_if_moved
from ..pipeline.checks_step import damaged_warc_remedy, warc_cut_short
from ..storage.layout import warc_dir
from ..storage.shared_root import connect, is_remote
from .capture_index import CaptureIndex
from .catalog_location import CATALOG_HELP, choose_catalog

# Columns an export query must keep so each selected record can be found.
LOCATION_COLUMNS = ("date", "shard", "filename", "offset", "length")
CAPTURE_COLUMNS = ("url", "captured_at", "status", "mime", "digest", "warc_type", "profile",
                   "refers_to_uri", "refers_to_date") + LOCATION_COLUMNS
SELECTED = ", ".join(f'"{c}"' for c in CAPTURE_COLUMNS)  # quoted: offset is an SQL keyword

# A URL's records (sorted in Python, with_renderings).
CAPTURES_OF_SQL = f"SELECT {SELECTED} FROM captures WHERE urlkey = $key"
# A caller looking up URL after URL (a script in a loop) is answered from an in-memory index of
# the captures (capture_index.py) once it has looked up this many.
LOOKUPS_BEFORE_INDEX = 3
# The full capture holding a payload: same digest, the one the revisit names first (a
# conversion's digest is its DOM's, never a payload's).
ORIGINAL_BY_DIGEST_SQL = f"""
SELECT {SELECTED} FROM captures
WHERE digest = $digest AND warc_type <> $revisit AND warc_type <> $conversion
ORDER BY (url = $uri) DESC, abs(epoch(captured_at) - epoch($when::TIMESTAMPTZ)), captured_at
LIMIT 1
"""
# Without a digest (a 304 whose earlier payload was not known): the URL's nearest full capture.
ORIGINAL_BY_URL_SQL = f"""
SELECT {SELECTED} FROM captures
WHERE urlkey = $key AND warc_type <> $revisit AND warc_type <> $conversion
ORDER BY abs(epoch(captured_at) - epoch($when::TIMESTAMPTZ)), captured_at
LIMIT 1
"""
# The records of some URL keys, of one kind or not of it (export: the conversions of the
# selected captures, the captures of the selected conversions).
OF_KEYS_SQL = f"""
SELECT {SELECTED} FROM captures
WHERE urlkey IN (SELECT unnest($keys)) AND (warc_type = $kind) = $same
"""

# Captures lost with a quarantined WARC file (pipeline/archive/warc_quarantine.py), by URL key.
LOST_OF_SQL = """
SELECT CAST(date AS VARCHAR), filename, reason FROM lost_captures
WHERE url = $url ORDER BY captured_at
"""

# Where the last indexed record of one WARC file ends: a shorter file was cut short.
INDEXED_END_SQL = """
SELECT max("offset" + length) FROM captures
WHERE CAST(date AS VARCHAR) = $date AND shard = $shard AND filename = $filename
"""


class CaptureLookupError(Exception):
    """A look-up that cannot be answered; the message says why and what to do."""


class DamagedCapture(CaptureLookupError):
    """A record that does not read whole: its file is damaged; the message says what to do."""


@dataclass(frozen=True)
class CaptureInfo:
    """One indexed record: what the captures view says of it, and where it lies."""

    url: str
    captured_at: datetime
    crawl_date: str  # the day's partition (YYYY-MM-DD) whose fetch batch wrote the record
    shard: str  # and its shard
    status: int | None
    mime: str | None
    digest: str | None
    warc_type: str
    profile: str | None
    refers_to_uri: str | None
    refers_to_date: datetime | None
    path: Path
    offset: int
    length: int
    rendered: CaptureInfo | None = None  # the conversion record holding the DOM rendered from it

    @property
    def source_key(self) -> tuple[str, datetime]:
        """(URI, date) of the capture this record was made from: a conversion's refers-to
        fields, falling back on its own (the render tier dates a DOM as its capture); any
        other record's own."""
        if self.warc_type == WarcRecordKind.CONVERSION:
            return self.refers_to_uri or self.url, self.refers_to_date or self.captured_at
        return self.url, self.captured_at


@dataclass(frozen=True)
class CaptureContent:
    """A capture as replay would serve it: status, headers, body (Content-Encoding undone);
    or, with dom, the DOM a browser rendered from it (its conversion record's type and body)."""

    capture: CaptureInfo
    payload_from: CaptureInfo  # the record the body was read from (itself, unless a revisit or a DOM)
    status: int | None
    headers: list[tuple[str, str]]
    body: bytes
    dom: bool = False


@dataclass(frozen=True)
class ExportResult:
    path: Path
    selected: int  # records the query selected
    originals_added: int  # full captures added so the selected revisits resolve
    bytes: int
    renderings_added: int = 0  # DOMs (conversion records) of the selected captures
    captures_added: int = 0  # the captures the selected DOMs were made from


def with_renderings(records: list[CaptureInfo]) -> list[CaptureInfo]:
    """The captures among `records`, each with the conversion record made from it (its
    rendered DOM) when there is one among them; a conversion whose capture is not among them
    stays on its own."""
    conversions = {r.source_key: r for r in records if r.warc_type == WarcRecordKind.CONVERSION}
    captures = [dataclasses.replace(r, rendered=conversions.pop(r.source_key, None)) for r in records
                if r.warc_type != WarcRecordKind.CONVERSION]
    return sorted(captures + list(conversions.values()), key=lambda c: (c.captured_at, c.url))


def parse_when(text: str) -> tuple[datetime, bool]:
    """(moment in UTC, whether a whole day was given) from YYYY-MM-DD, YYYYMMDD, a 14-digit
    timestamp or an ISO date-time."""
    value = text.strip()
    try:
        if re.fullmatch(r"\d{8}", value) or re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
            day = date.fromisoformat(value if "-" in value else f"{value[:4]}-{value[4:6]}-{value[6:]}")
            return datetime.combine(day, time(), timezone.utc), True
        if re.fullmatch(r"\d{14}", value):
            return datetime.strptime(value, "%Y%m%d%H%M%S").replace(tzinfo=timezone.utc), False
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        return (moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)), False
    except ValueError:
        raise CaptureLookupError(
            f"bad date {text!r}: give YYYY-MM-DD, a 14-digit timestamp (YYYYMMDDhhmmss) "
            "or an ISO date-time such as 2026-11-29T10:00:00Z") from None


def read_record(info: CaptureInfo, root):
    """The one record at info.offset, read from info.length bytes of its file (no scan) and
    checked whole; DamagedCapture names the file and what to do (`root`: the data root)."""
    try:
        member = read_member(info.path, info.offset, info.length)
        uri = check_member(info.path, info.offset, member)
    except FileNotFoundError:
        raise CaptureLookupError(f"{info.path} is missing: the catalog is older than the WARC files "
                                 "on disk; rebuild it (materialise crawl_catalog)") from None
    except DamagedRecord as damage:
        raise DamagedCapture(f"the capture of {info.url} cannot be read whole: {damage}; "
                             f"{damaged_warc_remedy(info.path, info.crawl_date, info.shard, root)}") from None
    if uri != info.url:
        raise CaptureLookupError(f"{info.path} at offset {info.offset} does not hold the capture of "
                                 f"{info.url}: rebuild the indexes and the catalog")
    return next(iter(ArchiveIterator(io.BytesIO(member)))), member


class Captures:
    """Look-ups in one catalog (opened read-only). The WARC files lie under `data_root`: by
    default the catalog's folder; under a URL data root, the settings' data_root."""

    def __init__(self, catalog: str | os.PathLike, data_root=None, index_after: int | None = LOOKUPS_BEFORE_INDEX):
        """index_after: look-ups answered from the catalog's view before the in-memory index
        is loaded (None: never loaded but by keep_index())."""
        self.catalog = Path(catalog)
        self.data_root = self.catalog.parent if data_root is None else data_root
        if not self.catalog.exists():
            # Under a URL root the catalog is built in one machine's work_dir, a copy on the root.
            copy = f", copy the data root's {self.data_root / 'crawl.duckdb'} there" if is_remote(self.data_root) else ""
            raise CaptureLookupError(f"no catalog at {self.catalog}: run `make demo` or a crawl "
                                     f"(materialise crawl_catalog) first{copy}, or pass --catalog PATH")
        try:  # a local root copied or moved elsewhere: its catalog still names the old root's files
            self.rebuilt_from = None if is_remote(self.data_root) else rebuilt_if_moved(self.catalog)
            self.con = connect(str(self.catalog), read_only=True)  # a URL root's file system registered
        except duckdb.Error as exc:
            raise CaptureLookupError(f"{self.catalog} is not a DuckDB catalog ({exc})") from None
        views = {r[0] for r in self.con.execute("SELECT view_name FROM duckdb_views()").fetchall()}
        self.has_losses = "lost_captures" in views
        self._lookups, self._index, self._index_after = 0, None, index_after
        if "captures" not in views:
            raise CaptureLookupError(f"{self.catalog} has no captures view: rebuild the catalog "
                                     "(materialise crawl_catalog) after a fetch batch")

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> "Captures":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- look-ups ------------------------------------------------------------------------

    def _infos(self, sql: str, params: dict) -> list[CaptureInfo]:
        cursor = self.con.execute(sql, params)
        names = [d[0] for d in cursor.description]
        return [self._info(dict(zip(names, row))) for row in cursor.fetchall()]

    def _info(self, row: dict) -> CaptureInfo:
        day = row["date"].isoformat() if hasattr(row["date"], "isoformat") else str(row["date"])
        path = warc_dir(self.data_root, day, row["shard"]) / row["filename"]
        return CaptureInfo(row["url"], row["captured_at"], day, row["shard"], row["status"], row["mime"], row["digest"],
                           row["warc_type"], row["profile"], row["refers_to_uri"], row["refers_to_date"],
                           path, row["offset"], row["length"])

    def keep_index(self) -> bool:
        """Answer the look-ups that follow from an in-memory index of the captures (loaded on
        the index_after + 1st look-up, or now); whether there is one (not for a catalog too
        large for memory: capture_index.MAX_ROWS)."""
        if self._index is None and CaptureIndex.fits(self.con):
            self._index = CaptureIndex(self.con, SELECTED)
        return self._index is not None

    @property
    def indexed(self) -> bool:
        """Whether look-ups are answered from the in-memory index."""
        return self._index is not None

    def captures_of(self, url: str) -> list[CaptureInfo]:
        """Every capture of `url`, oldest first, each with its rendered DOM when it was
        rendered (an empty list when there is none)."""
        self._lookups += 1
        if self._lookups == (self._index_after or 0) + 1 and self._index_after is not None:
            self.keep_index()
        key = url_key(url)
        found = ([self._info(row) for row in self._index.rows(key)] if self._index is not None
                 else self._infos(CAPTURES_OF_SQL, {"key": key}))
        exact = [c for c in found if c.url == url]
        return with_renderings(exact or found)

    def cut_short(self, captures: list[CaptureInfo]) -> dict[Path, str]:
        """The WARC files of these captures that are shorter than their index says, or missing,
        each with the sentence that says what to do (the catalog's warc_files_whole check)."""
        damaged = {}
        records = [r for c in captures for r in (c, c.rendered) if r is not None]
        for c in {c.path: c for c in records}.values():
            params = {"date": c.crawl_date, "shard": c.shard, "filename": c.path.name}
            end = self.con.execute(INDEXED_END_SQL, params).fetchone()[0]
            sentence = warc_cut_short(c.path, c.crawl_date, c.shard, end, self.data_root)
            if sentence:
                damaged[c.path] = sentence
        return damaged

    def capture(self, url: str, when: str | datetime | None = None, shell: bool = False) -> CaptureContent:
        """The capture of `url` closest to `when` (a day: the latest capture of that day's
        crawl, or else captured that day; none: the latest), read from its WARC record and,
        for a revisit, the original's payload; of a rendered capture, its DOM unless `shell`."""
        found = self.captures_of(url)
        if not found:
            raise CaptureLookupError(f"no capture of {url} in {self.catalog}{self.lost_note(url)}: "
                                     f"`python -m crawl_assets.analyst.captures list` shows what is there")
        chosen = found[-1]
        if when is not None:
            moment, whole_day = parse_when(when) if isinstance(when, str) else (when, False)
            if whole_day:
                day = moment.date().isoformat()
                that_day = ([c for c in found if c.crawl_date == day]
                            or [c for c in found if moment <= c.captured_at < moment + timedelta(days=1)])
                if not that_day:
                    days = sorted({c.crawl_date for c in found})
                    raise CaptureLookupError(f"no capture of {url} on {moment.date()}{self.lost_note(url, day)}; "
                                             f"captured on: {', '.join(days)}")
                chosen = that_day[-1]
            else:
                chosen = min(found, key=lambda c: abs((c.captured_at - moment).total_seconds()))
        return self.read(chosen, shell)

    def lost_note(self, url: str, day: str | None = None) -> str:
        """": its capture of D was lost (...)" when a quarantined WARC file held one (of `day`,
        or of any day), else ""."""
        rows = self.con.execute(LOST_OF_SQL, {"url": url}).fetchall() if self.has_losses else []
        lost = [(date_, filename, reason) for date_, filename, reason in rows if day in (None, date_)]
        if not lost:
            return ""
        date_, filename, reason = lost[-1]
        return (f": its capture of {date_} was lost with the quarantined WARC file {filename} ({reason}; "
                "the catalog's lost_captures view lists every lost record)")

    def original_of(self, revisit: CaptureInfo) -> CaptureInfo:
        """The full capture holding a revisit's payload."""
        when = revisit.refers_to_date or revisit.captured_at
        params = {"when": when, "revisit": WarcRecordKind.REVISIT, "conversion": WarcRecordKind.CONVERSION}
        if revisit.digest:
            rows = self._infos(ORIGINAL_BY_DIGEST_SQL, {**params, "digest": revisit.digest,
                                                        "uri": revisit.refers_to_uri or revisit.url})
        else:
            rows = self._infos(ORIGINAL_BY_URL_SQL, {**params, "key": url_key(revisit.refers_to_uri or revisit.url)})
        if not rows:
            raise CaptureLookupError(f"the revisit of {revisit.url} at {revisit.captured_at} refers to "
                                     f"{revisit.refers_to_uri} at {revisit.refers_to_date}, which no "
                                     "indexed WARC file holds")
        return rows[0]

    def read(self, info: CaptureInfo, shell: bool = False) -> CaptureContent:
        """A capture's content as replay serves it; a rendered one's DOM unless `shell`."""
        if info.rendered is not None and not shell:
            record, _ = read_record(info.rendered, self.data_root)
            return CaptureContent(info, info.rendered, None, [("Content-Type", record.rec_headers.get_header("Content-Type"))],
                                  record.content_stream().read(), dom=True)
        record, _ = read_record(info, self.data_root)
        source, payload_record = info, record
        if info.warc_type == WarcRecordKind.REVISIT:
            source = self.original_of(info)
            payload_record, _ = read_record(source, self.data_root)
        # A revisit's own HTTP headers (identical payload) are what replay serves; a 304
        # revisit has none, so the original's stand.
        http = record.http_headers if record.http_headers else payload_record.http_headers
        status = int(http.get_statuscode()) if http and http.get_statuscode() else None
        headers = list(http.headers) if http else []
        return CaptureContent(info, source, status, headers, payload_record.content_stream().read())

    # -- export -----------------------------------------------------------------------------

    def export(self, query: str, out_path: str | os.PathLike) -> ExportResult:
        """Write the records a query over `captures` selects to a new WARC file (warcinfo
        first, then each record's gzip member copied as it is), adding the full captures
        the selected revisits refer to, so the new file replays on its own."""
        out = Path(out_path)
        if not out.name.endswith(".warc.gz"):
            raise CaptureLookupError(f"{out}: the export is gzip-compressed WARC, name it *.warc.gz")
        try:
            cursor = self.con.execute(f"SELECT * FROM ({query.strip().rstrip(';')})")
        except duckdb.Error as exc:
            raise CaptureLookupError(f"the query failed: {exc}") from None
        names = [d[0] for d in cursor.description]
        missing = [c for c in CAPTURE_COLUMNS if c not in names]
        if missing:
            raise CaptureLookupError(f"the query must select rows of the captures view with their "
                                     f"columns (SELECT * FROM captures WHERE ...); missing: {', '.join(missing)}")
        selected = [self._info(dict(zip(names, row))) for row in cursor.fetchall()]
        chosen = {(c.path, c.offset): c for c in selected}
        renderings, made_from = self._related(selected)
        captures = self._add(chosen, made_from)
        originals = self._add(chosen, [self.original_of(c) for c in (*selected, *made_from)
                                       if c.warc_type == WarcRecordKind.REVISIT])
        renderings = self._add(chosen, renderings)
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(out.name + OPEN_SUFFIX)
        try:
            self._write_export(tmp, out, query, selected, chosen)
        except BaseException:  # a damaged record: no half export is left behind
            tmp.unlink(missing_ok=True)
            raise
        os.replace(tmp, out)
        return ExportResult(out, len(selected), originals, out.stat().st_size, renderings, captures)

    def _write_export(self, tmp: Path, out: Path, query: str, selected: list[CaptureInfo],
                      chosen: dict) -> None:
        with open(tmp, "wb") as fh:
            writer = WARCWriter(fh, gzip=True, warc_version="1.1")
            writer.write_record(writer.create_warcinfo_record(out.name, {
                "software": "recrawl crawl_assets.analyst.captures export",
                "format": "WARC File Format 1.1",
                "description": f"{len(selected)} records selected by: {' '.join(query.split())}",
                "created": warc_date(datetime.now(timezone.utc)),
            }))
            for info in sorted(chosen.values(), key=lambda c: (c.captured_at, str(c.path), c.offset)):
                _, member = read_record(info, self.data_root)
                fh.write(member)

    def _related(self, selected: list[CaptureInfo]) -> tuple[list[CaptureInfo], list[CaptureInfo]]:
        """(the DOMs rendered from the selected captures, the captures the selected DOMs were
        made from), each found with one query over the URL keys selected."""
        def of_keys(records: list[CaptureInfo], same: bool) -> list[CaptureInfo]:
            keys = sorted({url_key(c.source_key[0]) for c in records})
            return self._infos(OF_KEYS_SQL, {"keys": keys, "kind": WarcRecordKind.CONVERSION, "same": same}) if keys else []

        dom_sources = {c.source_key for c in selected if c.warc_type == WarcRecordKind.CONVERSION}
        captures = {c.source_key for c in selected if c.warc_type != WarcRecordKind.CONVERSION}
        renderings = [c for c in of_keys([c for c in selected if c.source_key in captures], True) if c.source_key in captures]
        made_from = [c for c in of_keys([c for c in selected if c.source_key in dom_sources], False)
                     if c.source_key in dom_sources]
        return renderings, made_from

    @staticmethod
    def _add(chosen: dict, records: list[CaptureInfo]) -> int:
        """Add `records` to the export's (path, offset) -> record; how many were not in it."""
        added = 0
        for record in records:
            if (record.path, record.offset) not in chosen:
                chosen[(record.path, record.offset)] = record
                added += 1
        return added


# -- the command -----------------------------------------------------------------------


def _print_list(captures: list[CaptureInfo], url: str, damaged: dict[Path, str]) -> None:
    """One line a capture, and under a rendered one a line for its DOM; a record in a damaged
    WARC file is flagged, and each damaged file's sentence follows on stderr."""
    rendered = sum(c.rendered is not None for c in captures)
    print(f"{len(captures)} capture(s) of {url}" + (f", {rendered} rendered (`show` prints the rendered DOM, "
                                                     "`show --shell` the HTML as sent)" if rendered else ""))
    for c in captures:
        what = c.warc_type if not c.profile else f"revisit ({c.profile.rsplit('/', 1)[-1]})"
        flag = "  DAMAGED FILE (below)" if c.path in damaged else ""
        print(f"  {c.captured_at:%Y-%m-%dT%H:%M:%SZ}  {c.status if c.status is not None else '-':>3}  "
              f"{c.mime or '-':<24} {what:<36} {c.path.name}@{c.offset}{flag}")
        if c.rendered is not None:
            dom = c.rendered
            flag = "  DAMAGED FILE (below)" if dom.path in damaged else ""
            print(f"  {'':20}  {'':3}  {dom.mime or '-':<24} {'rendered DOM (conversion)':<36} "
                  f"{dom.path.name}@{dom.offset}{flag}")
    sys.stdout.flush()
    for sentence in damaged.values():
        print(f"captures: {sentence}", file=sys.stderr)


def _print_content(content: CaptureContent, headers_only: bool) -> None:
    c = content.capture
    print(f"# {c.url} captured {c.captured_at:%Y-%m-%dT%H:%M:%SZ} ({c.warc_type}, {c.path.name}@{c.offset})")
    p = content.payload_from
    if content.dom:
        print(f"# the rendered DOM: what a browser built from this capture by running its scripts "
              f"(conversion record, {p.path.name}@{p.offset}); --shell prints the HTML as the server sent it")
    elif p is not c:
        print(f"# payload from {p.url} captured {p.captured_at:%Y-%m-%dT%H:%M:%SZ} ({p.path.name}@{p.offset})")
    if content.status is not None:
        print(f"HTTP {content.status}")
    for name, value in content.headers:
        print(f"{name}: {value}")
    if not headers_only:
        print()
        sys.stdout.flush()
        sys.stdout.buffer.write(content.body)
        if not content.body.endswith(b"\n"):
            sys.stdout.buffer.write(b"\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m crawl_assets.analyst.captures", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--catalog", help=CATALOG_HELP)
    commands = parser.add_subparsers(dest="command", required=True)
    listing = commands.add_parser("list", help="every capture of a URL")
    listing.add_argument("url")
    show = commands.add_parser("show", help="one capture's status, headers and body")
    show.add_argument("url")
    show.add_argument("--date", help="YYYY-MM-DD (that day's crawl's latest capture) or a 14-digit timestamp (the closest)")
    show.add_argument("--headers-only", action="store_true")
    show.add_argument("--shell", action="store_true",
                      help="of a rendered page, the HTML as the server sent it (by default: the rendered DOM)")
    export = commands.add_parser("export", help="the captures a SQL query selects, into a new WARC file")
    export.add_argument("query", help='e.g. "SELECT * FROM captures WHERE url LIKE \'%%/about%%\'"')
    export.add_argument("out", help="the new file (*.warc.gz)")
    args = parser.parse_args(argv)
    try:
        choice = choose_catalog(args.catalog)
        if choice.note:
            print(f"captures: {choice.note}", file=sys.stderr)
        with Captures(choice.path, choice.data_root) as captures:
            if captures.rebuilt_from:
                print(f"captures: {captures.catalog} was built over {captures.rebuilt_from}: "
                      f"rebuilt it over its own folder", file=sys.stderr)
            if args.command == "list":
                found = captures.captures_of(args.url)
                if not found:
                    raise CaptureLookupError(f"no capture of {args.url} in {captures.catalog}")
                damaged = captures.cut_short(found)
                _print_list(found, args.url, damaged)
                if damaged:
                    return 1
            elif args.command == "show":
                _print_content(captures.capture(args.url, args.date, args.shell), args.headers_only)
            else:
                result = captures.export(args.query, args.out)
                print(f"wrote {result.path}: {result.selected} selected record(s), "
                      f"{result.originals_added} original(s) their revisits refer to, "
                      f"{result.renderings_added} rendered DOM(s) of the selected captures, "
                      f"{result.captures_added} capture(s) the selected DOMs were made from; {result.bytes:,} bytes")
    except DamagedCapture as exc:  # a record that does not read whole: the archive needs a repair
        print(f"captures: {exc}", file=sys.stderr)
        return 1
    except (CaptureLookupError, CrawlInputError) as exc:  # a lookup that failed, or bad settings
        print(f"captures: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
