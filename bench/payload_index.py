"""Archived-payload look-up benchmark: a fetch batch over an archive of 10 million payloads.

    .venv/bin/python bench/payload_index.py [--payloads 10000000] [--hosts 64] [--keep DIR]

Writes WARC capture indexes (warc/date=D/shard=S/*.parquet, the columns the look-up reads)
for --payloads distinct payloads over 10 days with DuckDB, among them the payloads of half the
demo web's pages (so those pages become revisit records when fetched). Then, each in a fresh
process so its peak RSS (VmHWM) is its own:

1. a fetch batch of the demo web (--hosts hosts, 10 pages each, robots, WARC, links) whose
   archived payloads come from the fetch step's loader, load_archived_payloads, which builds
   the index on disk first (payload_index.py): the first batch of a day on a machine;
2. the same batch once the index is there: every other batch of the day.

Beside them: the size of the look-up's files (keys, offsets, heap; rows.parquet beside them
is for the next day's build), how long it took to build, look-ups a second (random digests,
half of them archived), and what the dict the loader used to return took per million payloads
(measured on 1 million in a process of its own).

Goal (issue 39): a fetch batch over 10 million archived payloads under 600 MB RSS.
Last line: `payload_index payloads= build_s= index_mb= batch_peak_rss_mb= batch_peak_rss_built_mb=
lookups_per_s= revisits= pages= dict_mb_per_million=`
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench"), str(ROOT)]

DAY = "2026-11-30"  # the day fetched; the archive is the 10 days before
ARCHIVE_DAYS = 10
SHARDS = 4
GOAL_RSS_MB = 600


def demo_digests(hosts: int, port: int) -> list[tuple[str, str]]:
    """(URL, payload digest) of every second page of the demo web on `port` (its pages link
    with the port: the bytes its server will send)."""
    from crawl_assets.crawler.archive.warc import payload_digest
    from demoweb import DemoWeb

    web = DemoWeb(seed=1, hosts=hosts, pages_per_host=10, port=port)
    pages = []
    for host in range(hosts):
        for n, url in enumerate(web.page_urls(host)):
            if n % 2 == 0:
                path = "/" + url.split("/", 3)[3]
                answer = web.respond(web.hostname(host), path, {})
                if answer.status == 200:
                    pages.append((url, payload_digest(answer.body)))
    return pages


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def generate(root: Path, payloads: int, hosts: int, port: int) -> None:
    import duckdb
    import pyarrow as pa

    from crawl_assets.storage.layout import warc_dir

    con = duckdb.connect()
    con.execute("SET memory_limit = '2GB'")
    con.execute("SET preserve_insertion_order = false")
    known = demo_digests(hosts, port)
    con.register("demo", pa.table({"url": [u for u, _ in known], "digest": [d for _, d in known]}))
    per_part = payloads // (ARCHIVE_DAYS * SHARDS)
    for day in range(ARCHIVE_DAYS):
        date = f"2026-11-{20 + day:02d}"
        for shard in range(SHARDS):
            part = day * SHARDS + shard
            path = warc_dir(root, date, f"s{shard:02d}") / "bench.parquet"
            path.parent.mkdir(parents=True, exist_ok=True)
            demo = "UNION ALL SELECT digest, url, TIMESTAMPTZ '2026-11-20 01:00:00+00', 'response', 200 FROM demo" \
                if part == 0 else ""
            con.execute(f"""COPY (
                SELECT 'sha1:' || upper(md5(i::VARCHAR))[1:32] AS digest,
                       'http://h' || (i % 100000) || '.bench.test/p/' || i AS url,
                       TIMESTAMPTZ '{date} 00:00:00+00' + to_microseconds((hash(i) % 86400000000)::BIGINT) AS captured_at,
                       'response' AS warc_type, 200 AS status
                FROM range({part * per_part}, {(part + 1) * per_part}) t(i)
                {demo}) TO '{path}' (FORMAT parquet)""")
    con.close()


def fetch_batch(root: Path, hosts: int, folder: Path, port: int) -> dict:
    """A fresh process: the archived payloads through the fetch step's loader, then a fetch batch."""
    import fetch_engine
    from crawl_assets.crawler.batches.batch import run_fetch_batch
    from crawl_assets.crawler.fetching.workbench import FetchTask
    from crawl_assets.crawler.vocabulary import StatusClass, WarcRecordKind
    from crawl_assets.pipeline.fetch_step import load_archived_payloads
    from demoweb.process import DemoWebProcess
    from measures import peak_rss_kb

    started = time.perf_counter()
    archived = load_archived_payloads(root, DAY, folder)
    loaded = time.perf_counter() - started
    with DemoWebProcess(seed=1, hosts=hosts, pages_per_host=10, port=port) as server:
        seeds = [server.web.base_url(i) + "/" for i in range(hosts)]
        settings = fetch_engine.engine_settings(fetch_engine.ShardJob(0, 1, 32, 0.01, 26, server.port, seeds, ""))
        warc = Path(tempfile.mkdtemp(prefix="payload-bench-"))
        try:
            result = run_fetch_batch(settings, 0, [FetchTask.for_url(u) for u in seeds], warc, "bench",
                                     known_payloads=archived)
        finally:
            shutil.rmtree(warc, ignore_errors=True)
    records = result.output.records
    return {"load_s": loaded, "peak_rss_mb": peak_rss_kb() / 1024, "archived": len(archived),
            "pages": sum(r.status_class == StatusClass.OK for r in records),
            "revisits": sum(r.warc_type == WarcRecordKind.REVISIT for r in records)}


def lookups(root: Path, folder: Path, payloads: int) -> dict:
    from crawl_assets.pipeline.fetch_step import load_archived_payloads

    index = load_archived_payloads(root, DAY, folder)
    rng = random.Random(1)
    import hashlib
    asks = [f"sha1:{hashlib.md5(str(rng.randrange(payloads)).encode()).hexdigest().upper()[:32]}"
            if n % 2 else f"sha1:{rng.getrandbits(128):032X}" for n in range(20000)]
    started = time.perf_counter()
    hits = sum(index.get(digest) is not None for digest in asks)
    return {"lookups_per_s": len(asks) / (time.perf_counter() - started), "hits": hits}


def dict_cost(root: Path) -> dict:
    """What the old loader's dict took: 1 million entries, (URI, WARC-Date) each."""
    import duckdb

    from crawl_assets.crawler.archive.warc import warc_date
    from measures import peak_rss_kb

    files = str(root / "warc" / "date=*" / "shard=*" / "*.parquet")
    rows = duckdb.connect().execute(f"SELECT digest, url, captured_at FROM read_parquet('{files}') LIMIT 1000000").fetchall()
    before = _rss_kb()
    table = {digest: (url, warc_date(first)) for digest, url, first in rows}
    del rows
    return {"dict_mb_per_million": (_rss_kb() - before) / 1024 * 1_000_000 / len(table), "peak": peak_rss_kb()}


def _rss_kb() -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))


def child(*args: str) -> dict:
    done = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        print(done.stderr, file=sys.stderr)
        raise SystemExit(1)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--payloads", type=int, default=10_000_000)
    parser.add_argument("--hosts", type=int, default=64)
    parser.add_argument("--keep", type=Path, help="generate the archive here (or reuse it), and keep it")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, root, folder, port = args.child
        work = {"batch": lambda: fetch_batch(Path(root), args.hosts, Path(folder), int(port)),
                "lookups": lambda: lookups(Path(root), Path(folder), args.payloads),
                "dict": lambda: dict_cost(Path(root))}[kind]
        print(json.dumps(work()))
        return 0
    root = args.keep or Path(tempfile.mkdtemp(prefix="payload-bench-root-"))
    folder = Path(tempfile.mkdtemp(prefix="payload-bench-index-"))
    try:
        port_file = root / "demo-port"  # the demo web's pages link with its port: the archive holds them so
        if not (root / "warc").exists():
            started = time.perf_counter()
            root.mkdir(parents=True, exist_ok=True)
            port_file.write_text(str(free_port()))
            generate(root, args.payloads, args.hosts, int(port_file.read_text()))
            print(f"archive of {args.payloads:,} payloads written in {time.perf_counter() - started:.0f} s", flush=True)
        sizes = ["--payloads", str(args.payloads), "--hosts", str(args.hosts)]
        port = port_file.read_text()
        first = child(*sizes, "--child", "batch", str(root), str(folder), port)
        index_mb = sum(p.stat().st_size for p in folder.glob("before=*/*") if p.name != "rows.parquet") / 2**20
        print(f"first batch of the day: index of {first['archived']:,} payloads built in {first['load_s']:.1f} s "
              f"({index_mb:.0f} MB), {first['pages']} pages, {first['revisits']} revisits, "
              f"peak RSS {first['peak_rss_mb']:.0f} MB", flush=True)
        again = child(*sizes, "--child", "batch", str(root), str(folder), port)
        print(f"a batch with the index there: loaded in {again['load_s']:.2f} s, {again['pages']} pages, "
              f"{again['revisits']} revisits, peak RSS {again['peak_rss_mb']:.0f} MB", flush=True)
        asked = child(*sizes, "--child", "lookups", str(root), str(folder), port)
        old = child(*sizes, "--child", "dict", str(root), str(folder), port)
        print(f"look-ups: {asked['lookups_per_s']:,.0f} a second ({asked['hits']} of 20,000 archived); the old "
              f"dict: {old['dict_mb_per_million']:.0f} MB a million payloads")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    peak = max(first["peak_rss_mb"], again["peak_rss_mb"])
    print(f"goal (a fetch batch under {GOAL_RSS_MB} MB over {args.payloads:,} payloads): "
          f"{'met' if peak < GOAL_RSS_MB else 'NOT met'}")
    print(f"payload_index payloads={first['archived']} build_s={first['load_s']:.1f} index_mb={index_mb:.0f} "
          f"batch_peak_rss_mb={first['peak_rss_mb']:.0f} batch_peak_rss_built_mb={again['peak_rss_mb']:.0f} "
          f"lookups_per_s={asked['lookups_per_s']:.0f} revisits={again['revisits']} pages={again['pages']} "
          f"dict_mb_per_million={old['dict_mb_per_million']:.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
