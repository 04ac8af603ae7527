"""Capture index benchmark: index the WARC files of a 100,000-page crawl (CDXJ + Parquet,
crawl_assets.crawler.archive.warc_index), time cdxj-indexer on the same files, then answer 10,000
random capture look-ups with the analyst tool's own code (crawl_assets.analyst.captures) over
the crawl's catalog.

    .venv/bin/python bench/index.py [--pages 100000] [--lookups 10000] [--keep DIR]

The crawl is synthetic and needs no network: WarcFileWriter (the crawler's own writer) writes
--pages exchanges over 200 hosts, 2-12 KB HTML bodies of random words, 1 in 10 a 304 revisit
and 1 in 20 an identical-payload revisit, into 64 MiB files laid out as a data root's
(warc/date=D/shard=s00/). Indexing is timed end to end (read every record, write <name>.cdxj
and <name>.parquet); cdxj-indexer is timed in-process (CDXJIndexer with sort=True, the same
output) on the same files. The catalog is then built over the root (catalog_step.build_catalog,
as crawl_catalog does) and look-ups go through Captures, as a script calling the tool in a loop
would: the first ones read the catalog's captures view (view_lookups_per_s), then Captures
loads its in-memory index of the captures (load_s, capture_index.py) and the rest are answered
from it (lookups_per_s), each checked to find its URL; 100 are read back whole from the WARC
files by offset (Captures.read); the same look-ups as one joined query over the view give
batch_lookups_per_s. The machine's load average is printed: look-ups are single-threaded
latency, so a busy shared machine lowers them most. Goals: lookups_per_s >= 1,000;
index_s <= cdxj_indexer_s.
The last line is machine-readable.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


from crawl_assets.crawler.archive.warc import (  # noqa: E402
    IDENTICAL_PAYLOAD, SERVER_NOT_MODIFIED, Exchange, Revisit, WarcFileWriter, payload_digest, warc_date)
from crawl_assets.analyst.captures import Captures  # noqa: E402
from crawl_assets.crawler.archive.warc_index import url_key, write_index  # noqa: E402
from crawl_assets.pipeline.catalog_step import build_catalog  # noqa: E402
from crawl_assets.storage.layout import warc_dir  # noqa: E402

WORDS = ("archive river meadow signal harbour lantern copper orchard engine glass measure "
         "window travel garden letter market silver morning station bridge").split()
LOOKUP_GOAL = 1_000
DAY = "2026-11-28"
VIEW_LOOKUPS = 200  # answered from the view before the index is loaded, for the comparison


def synthetic_crawl(folder: Path, pages: int, rng: random.Random) -> tuple[list[Path], list[str]]:
    """WARC files of `pages` exchanges; returns the files and every URL written."""
    start = datetime(2026, 11, 28, tzinfo=timezone.utc)
    urls, written = [], []
    with WarcFileWriter(folder, "bench", "bench/index.py", max_file_bytes=64 << 20) as writer:
        for i in range(pages):
            host = f"h{i % 200:04d}.bench.test"
            url = f"http://{host}/page/{i // 200}?v={rng.randrange(1000)}"
            when = start + timedelta(seconds=i * 0.5)
            body = (f"<html><head><title>page {i}</title></head><body><p>"
                    + " ".join(rng.choices(WORDS, k=rng.randrange(250, 1500))) + "</p></body></html>").encode()
            revisit, status, reason, digest = None, 200, "OK", None
            if i % 10 == 9 and written:  # a 304 of an earlier page
                earlier_url, earlier_when, earlier_digest = written[rng.randrange(len(written))]
                url, body, status, reason, digest = earlier_url, b"", 304, "Not Modified", earlier_digest
                revisit = Revisit(SERVER_NOT_MODIFIED, earlier_url, warc_date(earlier_when))
            elif i % 20 == 0 and written:  # a copy of an earlier page's payload under this URL
                _, earlier_when, earlier_digest = written[-1]
                revisit = Revisit(IDENTICAL_PAYLOAD, written[-1][0], warc_date(earlier_when))
                digest = earlier_digest
            else:
                digest = payload_digest(body)
                written.append((url, when, digest))
            headers = [("Content-Type", "text/html; charset=utf-8"), ("Content-Length", str(len(body)))]
            writer.write(Exchange(url, "127.0.0.1", when, "GET", url.split("/", 3)[3], [("Host", host)],
                                  "HTTP/1.1", status, reason, headers, body), revisit, digest)
            urls.append(url)
    return writer.closed_files, urls


def time_ours(warcs: list[Path]) -> tuple[int, float]:
    started = time.perf_counter()
    records = sum(write_index(p) for p in warcs)
    return records, time.perf_counter() - started


def time_cdxj_indexer(warcs: list[Path], out: Path) -> tuple[int, float]:
    from cdxj_indexer.main import CDXJIndexer

    started = time.perf_counter()
    CDXJIndexer(output=str(out), inputs=[str(p) for p in warcs], sort=True).process_all()
    seconds = time.perf_counter() - started
    return sum(1 for _ in open(out)), seconds


def lookups(root: Path, urls: list[str], count: int, rng: random.Random) -> tuple[float, float, float, float, int]:
    """(load_s, look-ups per second from Captures' in-memory index, from the catalog's view,
    as one joined query, look-ups verified by reading the record whole)."""
    build_catalog(root, root / "crawl.duckdb")
    wanted = rng.sample(urls, count + VIEW_LOOKUPS)
    on_view, wanted = wanted[:VIEW_LOOKUPS], wanted[VIEW_LOOKUPS:]
    with Captures(root / "crawl.duckdb", index_after=None) as view:  # the view alone
        started = time.perf_counter()
        for url in on_view:
            view.captures_of(url)
        view_per_s = len(on_view) / (time.perf_counter() - started)
        keys = [url_key(u) for u in wanted]
        started = time.perf_counter()
        batch = view.con.execute('SELECT k.key, c.url, c.filename, c."offset", c.length FROM unnest($keys) AS k(key) '
                                 "JOIN captures AS c ON c.urlkey = k.key", {"keys": keys}).fetchall()
        batch_per_s = count / (time.perf_counter() - started)
    assert {row[0] for row in batch} == set(keys)
    with Captures(root / "crawl.duckdb") as captures:  # as a script calling it in a loop gets it
        started = time.perf_counter()
        assert captures.keep_index()
        load_s = time.perf_counter() - started
        started = time.perf_counter()
        answers = [captures.captures_of(url) for url in wanted]
        per_s = count / (time.perf_counter() - started)
        for url, found in zip(wanted, answers):
            assert any(c.url == url for c in found), f"no capture found for {url}"
        verified = 0
        for url, found in list(zip(wanted, answers))[:100]:
            content = captures.read(next(c for c in found if c.url == url))  # read back whole
            assert content.capture.url == url
            verified += 1
    return load_s, per_s, view_per_s, batch_per_s, verified


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=100_000)
    parser.add_argument("--lookups", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep", type=Path, help="write the crawl here and keep it (default: a temporary folder)")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    root = args.keep or Path(tempfile.mkdtemp(prefix="bench-index-"))
    folder = warc_dir(root, DAY, "s00")  # a data root's layout: the catalog is built over it
    try:
        started = time.perf_counter()
        warcs, urls = synthetic_crawl(folder, args.pages, rng)
        size = sum(p.stat().st_size for p in warcs)
        print(f"crawl: {args.pages:,} exchanges in {len(warcs)} WARC files, {size / 1e6:.1f} MB, "
              f"written in {time.perf_counter() - started:.1f} s", flush=True)
        theirs_records, theirs_s = time_cdxj_indexer(warcs, folder / "cdxj-indexer.cdxj")
        print(f"cdxj-indexer: {theirs_records:,} lines in {theirs_s:.2f} s", flush=True)
        records, index_s = time_ours(warcs)
        print(f"ours: {records:,} rows (CDXJ + Parquet) in {index_s:.2f} s "
              f"({theirs_s / index_s:.1f}x cdxj-indexer's speed)", flush=True)
        ours = sorted(line for p in warcs for line in open(p.with_name(p.name[:-len(".warc.gz")] + ".cdxj")))
        same = ours == sorted(open(folder / "cdxj-indexer.cdxj"))
        print(f"our CDXJ lines equal cdxj-indexer's: {same}")
        load_s, per_s, view_per_s, batch_per_s, verified = lookups(root, urls, min(args.lookups, len(urls) - VIEW_LOOKUPS),
                                                                   rng)
        print(f"look-ups through Captures: {args.lookups:,} at {per_s:,.0f}/s after loading its in-memory index in "
              f"{load_s:.2f} s ({verified} read back whole from the WARC by offset); goal >= {LOOKUP_GOAL:,}/s; "
              f"from the catalog's view {view_per_s:,.0f}/s; as one joined query {batch_per_s:,.0f}/s; "
              f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        print(f"index records={records} index_s={index_s:.2f} lookups_per_s={per_s:.0f} "
              f"cdxj_indexer_s={theirs_s:.2f} load_s={load_s:.2f} view_lookups_per_s={view_per_s:.0f} "
              f"batch_lookups_per_s={batch_per_s:.0f} "
              f"loadavg={os.getloadavg()[0]:.1f} same_lines={same} "
              f"goal_lookups={'met' if per_s >= LOOKUP_GOAL else 'missed'} "
              f"goal_index={'met' if index_s <= theirs_s else 'missed'}")
        return 0 if same else 1
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
