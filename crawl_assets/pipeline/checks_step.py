"""Checks of a crawl's outputs, judged from the outputs themselves (no Dagster here; the asset
checks in crawl_assets/defs/checks.py wrap these). Each returns a frozen verdict: passed, a count
of what failed, and a few examples to look at."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
from fastwarc.warc import ArchiveIterator as FastWarcIterator
from warcio.archiveiterator import ArchiveIterator as WarcioIterator

from ..crawler.url_policy.url_bloom import FP_SAMPLE_SIZE
from ..storage.layout import QUARANTINE_DIR, warc_dir
from ..storage.shared_root import connect, query_connection
from .day_order import crawled_days
from .fetch_step import REFETCH_TAG

# Clock tolerance of the politeness check: the fetch log stamps wall-clock starts and rounds
# durations to the microsecond, the engine spaces requests on the monotonic clock.
CLOCK_TOLERANCE_S = 0.002
EXAMPLES = 5


@dataclass(frozen=True)
class Verdict:
    passed: bool
    failures: int
    examples: tuple[str, ...] = ()
    measured: float | None = None


def _verdict(failures: list[str], measured: float | None = None) -> Verdict:
    return Verdict(not failures, len(failures), tuple(failures[:EXAMPLES]), measured)


# Per host, the time from one request's start to the next one's start. The fetch log's
# duration covers work after the host was handed back (reading, closing), so an end-to-start
# gap under load can look shorter than the delay the engine kept; start to start cannot.
STARTS_SQL = """
SELECT host, url,
       (epoch_us(fetched_at) - epoch_us(lag(fetched_at) OVER (PARTITION BY host ORDER BY fetched_at))) / 1e6 AS since_s
FROM fetch_log WHERE fetched_at IS NOT NULL
QUALIFY since_s IS NOT NULL
ORDER BY since_s
"""


def politeness(fetch_log: pa.Table, delay_s: float) -> Verdict:
    """No request to a host started sooner than `delay_s` after the previous one to it started,
    from the fetch log's own timings; `measured` is the smallest such interval."""
    con = query_connection()
    con.register("fetch_log", fetch_log)
    rows = con.execute(STARTS_SQL).fetchall()
    too_close = [f"{host}: {url} started {since:.4f} s after the previous request to it"
                 for host, url, since in rows if since < delay_s - CLOCK_TOLERANCE_S]
    return _verdict(too_close, measured=rows[0][2] if rows else None)


def frontier_accounted_for(frontier: pa.Table, fetch_log: pa.Table) -> Verdict:
    """Every frontier URL has a fetch-log row: fetched, refused with a reason, or deferred."""
    logged = set(fetch_log.column("url").to_pylist())
    return _verdict([url for url in frontier.column("url").to_pylist() if url not in logged])


def warc_records_match(fetch_log: pa.Table, warc_dir: Path) -> Verdict:
    """warcio and FastWARC both read every WARC file of the batch, and each fetch-log row's
    (file, offset) is a record of its URL and kind in both readings."""
    rows = [r for r in fetch_log.select(["url", "warc_type", "warc_file", "warc_offset"]).to_pylist()
            if r["warc_file"]]
    failures: list[str] = []
    for name in sorted({r["warc_file"] for r in rows}):
        path = warc_dir / name
        if not path.exists():
            failures.append(f"{name}: missing")
            continue
        readings = {"warcio": _warcio_records(path), "fastwarc": _fastwarc_records(path)}
        for reader, records in readings.items():
            for row in (r for r in rows if r["warc_file"] == name):
                found = records.get(row["warc_offset"])
                if found != (row["url"], row["warc_type"]):
                    failures.append(f"{reader}: {name}@{row['warc_offset']} is {found}, "
                                    f"the fetch log says {row['warc_type']} of {row['url']}")
    return _verdict(failures)


def _warcio_records(path: Path) -> dict[int, tuple[str | None, str]]:
    with open(path, "rb") as stream:
        iterator = WarcioIterator(stream)
        return {iterator.get_record_offset(): (record.rec_headers.get_header("WARC-Target-URI"), record.rec_type)
                for record in iterator}


def _fastwarc_records(path: Path) -> dict[int, tuple[str | None, str]]:
    with open(path, "rb") as stream:
        return {record.stream_pos: (record.headers.get("WARC-Target-URI"), record.headers.get("WARC-Type"))
                for record in FastWarcIterator(stream, parse_http=False)}


# Each WARC file the catalog's captures view indexes, and the byte where its last record ends.
INDEXED_ENDS_SQL = """
SELECT CAST(date AS VARCHAR) AS date, shard, filename, max("offset" + length) AS indexed_end
FROM captures GROUP BY ALL ORDER BY ALL
"""


def warc_cut_short(path: Path, date: str, shard: str, indexed_end: int, root: Path) -> str | None:
    """The sentence for a WARC file shorter than where its index says its last record ends (cut
    by a half copy, a disk error, another tool), or missing; None when it is whole."""
    size = path.stat().st_size if path.exists() else None
    if size is not None and size >= indexed_end:
        return None
    state = "is missing" if size is None else f"is cut short ({size:,} bytes)"
    return (f"{path} {state}, but its index has records up to byte {indexed_end:,}: the captures past "
            f"the cut cannot be read; {damaged_warc_remedy(path, date, shard, root)}")


def damaged_warc_remedy(path: Path, date: str, shard: str, root: Path) -> str:
    """What to do about a damaged WARC file of day `date`'s shard, each way through the cycle
    command. The fetch batch's own check read it whole, so a copy of it, or fetching the shard
    again, restores the records; a day with later days on top cannot be fetched again
    (day_order.check_in_order): without a copy, the loss is recorded and the crawl goes on."""
    quarantine = (f"record the loss and go on: run the cycle command again with --quarantine {path} (the file "
                  f"moves under {root / QUARANTINE_DIR}, its whole records stay readable in place, the lost "
                  "ones are listed in the catalog's lost_captures view)")
    later = [day for day in crawled_days(root) if day > date]
    if later:
        return (f"restore it from a copy ({date} lies beneath {later[-1]}, a later day, so it cannot be fetched "
                f"again), or {quarantine}")
    return (f"restore it from a copy, or fetch the shard again: python -m crawl_assets.cli.cycle --date {date} "
            f"--shards {shard} --refetch (in the UI: fetch_job for {date}|{shard} with the run tag "
            f"{REFETCH_TAG}=true), or {quarantine}")


def warc_files_whole(catalog_path: Path, root: Path) -> Verdict:
    """Every WARC file the catalog indexes, of every day so far, is at least as long as the end
    of its last indexed record (a size and an index footer per file, no reading of records)."""
    with connect(str(catalog_path), read_only=True) as con:
        views = {r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}
        ends = con.execute(INDEXED_ENDS_SQL).fetchall() if "captures" in views else []
    sentences = (warc_cut_short(warc_dir(root, date, shard) / name, date, shard, end, root)
                 for date, shard, name, end in ends)
    return _verdict([sentence for sentence in sentences if sentence])


def seen_filter_rate(measured_fp_rate: float, target_fp_rate: float, sample_size: int = FP_SAMPLE_SIZE) -> Verdict:
    """The Bloom filter's measured false-positive rate is within the rate it was sized for, give
    or take the sample's own noise: a filter at exactly its target measures above it half the
    time (0.00104 on 100,000 URLs is 0.4 standard errors over 0.001), so only a rate more than
    three standard errors over the target fails."""
    allowed = target_fp_rate + 3 * math.sqrt(target_fp_rate * (1 - target_fp_rate) / sample_size)
    failures = [] if measured_fp_rate <= allowed else [
        f"measured {measured_fp_rate:.5f} > target {target_fp_rate:.5f} (at most {allowed:.5f} "
        f"on {sample_size:,} URLs)"]
    return _verdict(failures, measured=measured_fp_rate)


def catalog_row_counts(catalog_path: Path, parquet_globs: dict[str, str]) -> Verdict:
    """Each plain view of the catalog has exactly the rows of the Parquet files it reads
    (footer counts, not a second query through the view's own SQL)."""
    failures = []
    with connect(str(catalog_path), read_only=True) as con:  # the files may lie under a URL root
        views = {r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}
        for view, glob in parquet_globs.items():
            files = [row[0] for row in con.execute("SELECT file FROM glob(?)", [glob]).fetchall()]
            if view not in views:
                if files:
                    failures.append(f"{view}: no view, though {len(files)} files exist")
                continue
            in_files = con.execute("SELECT coalesce(sum(num_rows), 0) FROM parquet_file_metadata(?)",
                                   [files]).fetchone()[0] if files else 0
            in_view = con.execute(f"SELECT count(*) FROM {view}").fetchone()[0]
            if in_view != in_files:
                failures.append(f"{view}: {in_view} rows, its files hold {in_files}")
    return _verdict(failures)
