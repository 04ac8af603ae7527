"""The recrawl priorities per shard (day_per_shard) against the one-process step, on
bench/priorities.py's synthetic crawl: each stage in a fresh process, as its Dagster step.

    .venv/bin/python bench/priorities_per_shard.py [--urls 1000000] [--rows 5000000] [--hosts 10000]
        [--days 20] [--shards 8] [--keep DIR]

bench/priorities.py's synthetic fetch log and change_stats (its full rebuild up to the day
before the last, then the last day's fold) give the inputs; the known URLs (5 % never
fetched), their in-links and a host table (delays, flags, each host's median rate) are
written beside them. Then, each in a fresh process (its peak RSS, VmHWM, its own):

1. the one-process step, recrawl_priorities over every URL (the plan written to Parquet);
2. per shard (shard_priorities.py): every shard's summary (priority_part), the crawl's price
   and plan from the summaries (crawl_price: one process, one shard's pages at a time), every
   shard's table at the price (shard_priorities).

The shards' tables, together, must equal the one-process table row for row (same_rows); the
figures say what each stage costs and what the coordinator holds. The last line:
priorities_per_shard urls= shards= whole_seconds= whole_peak_rss_mb= part_seconds_max=
part_peak_rss_mb_max= price_seconds= price_peak_rss_mb= plan_seconds_max= plan_peak_rss_mb_max=
summary_mb= same_rows=
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.priorities import generate, last_day  # noqa: E402


def settings_for(urls: int):
    from dataclasses import replace

    from crawl_assets.crawler.settings import CrawlSettings

    return replace(CrawlSettings(), daily_fetch_budget=urls // 10)


def prepare(log_dir: Path, work: Path, urls: int, hosts: int, days: int) -> dict:
    """change_stats' rebuild and the last day's fold (state under work/state), and the known
    URLs and host table as Parquet files in `work`."""
    import duckdb
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from crawl_assets.pipeline.change_stats.change_stats_step import change_stats

    settings, day = settings_for(urls), last_day(days)
    logs = str(log_dir / "date=*" / "*" / "*.parquet")
    previous = change_stats(logs, day - timedelta(days=1), settings, state_root=work / "state")
    stats = change_stats(str(log_dir / f"date={day}" / "*" / "*.parquet"), day, settings,
                         previous=previous.state, state_root=work / "state")
    rng = np.random.default_rng(1)
    ids = np.arange(urls + urls // 20)  # 5 % known but never fetched
    host_ids = pa.array(ids % hosts).cast(pa.string())
    url = pa.compute.binary_join_element_wise(
        pa.compute.binary_join_element_wise("https://h", host_ids, ".bench.test/p/", ""),
        pa.array(ids).cast(pa.string()), "")
    host = pa.compute.binary_join_element_wise("h", host_ids, ".bench.test", "")
    inlinks = np.concatenate([np.minimum(rng.zipf(1.8, urls) - 1, 10**6), np.zeros(len(ids) - urls, np.int64)])
    known = pa.table({"url": url, "host": host, "inlinks": inlinks})
    pq.write_table(known.take(pa.compute.sort_indices(known["url"])), work / "known.parquet")
    con = duckdb.connect()
    con.register("medians", stats.hosts.select(["host", "median_rate"]))
    con.register("facts", pa.table({"host": host.slice(0, hosts),
                                    "delay_s": np.where(rng.random(hosts) < 0.05, 3600.0, 1.0),
                                    "flagged": rng.random(hosts) < 0.01}))
    pq.write_table(con.sql("SELECT f.*, m.median_rate FROM facts f LEFT JOIN medians m USING (host) ORDER BY host")
                   .to_arrow_table(), work / "hosts.parquet")
    return {"urls": stats.counts.urls}


def inputs(work: Path, days: int, shard: str | None, shard_count: int):
    """The PartInputs of the whole crawl (shard None) or of one shard's hosts."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from crawl_assets.crawler.url_policy.sharding import shard_index, shard_of
    from crawl_assets.pipeline.change_stats.url_change_state import url_state
    from crawl_assets.pipeline.priorities.priorities_step import PartInputs

    state = url_state(work / "state", last_day(days).isoformat())
    known, hosts = pq.read_table(work / "known.parquet"), pq.read_table(work / "hosts.parquet")
    if shard is None:
        return PartInputs(state, None, hosts, known)
    mine = pa.array([shard_of(h, shard_count) == shard_index(shard) for h in hosts["host"].to_pylist()])
    hosts = hosts.filter(mine)
    return PartInputs(state, None, hosts, known.filter(pa.compute.is_in(known["host"], value_set=hosts["host"])),
                      hosts["host"])


def stage(name: str, work: Path, urls: int, days: int, shard: str | None, shard_count: int) -> dict:
    """One stage in this process, timed, with its peak RSS."""
    from dataclasses import replace

    import pyarrow.parquet as pq

    from bench.measures import peak_rss_kb
    from crawl_assets.crawler.url_policy.sharding import shard_keys
    from crawl_assets.pipeline.priorities.priorities_step import prepare_part, recrawl_priorities, write_part_urls
    from crawl_assets.pipeline.priorities.shard_priorities import (
        part_tables, plan_json, plan_of_shards, planned_rows, read_plan, shard_priorities, write_part,
    )

    settings = replace(settings_for(urls), shard_count=shard_count)
    plan_day = last_day(days) + timedelta(days=1)
    t0, cpu = time.perf_counter(), time.process_time()
    result = {}
    if name == "whole":
        part = inputs(work, days, None, shard_count)
        recrawl_priorities(part.change_stats, None, part.hosts, part.known_urls, plan_day, settings,
                           urls_out=work / "whole.parquet")
    elif name == "part":
        part = inputs(work, days, shard, shard_count)
        result["bytes"] = write_part(part_tables(prepare_part(part, settings), part.hosts), work / "parts" / shard)
    elif name == "price":
        plan = plan_of_shards({s: work / "parts" / s for s in shard_keys(shard_count)}, plan_day, settings)
        (work / "price.json").write_bytes(plan_json(plan))
        pq.write_table(planned_rows(plan), work / "planned.parquet")
    else:
        plan = read_plan((work / "price.json").read_bytes(), pq.read_table(work / "planned.parquet"), shard)
        write_part_urls(shard_priorities(work / "parts" / shard, plan, shard, plan_day, settings).urls,
                        work / "plans" / f"{shard}.parquet")
    return result | {"seconds": time.perf_counter() - t0, "cpu_seconds": time.process_time() - cpu,
                     "peak_rss_mb": peak_rss_kb() / 1024}


def child(*args: str) -> dict:
    done = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        print(done.stderr, file=sys.stderr)
        raise SystemExit(1)
    return json.loads(done.stdout.strip().splitlines()[-1])


def same_rows(work: Path) -> bool:
    import pyarrow as pa
    import pyarrow.parquet as pq

    whole = pq.read_table(work / "whole.parquet")
    shards = pa.concat_tables([pq.read_table(p) for p in sorted((work / "plans").glob("*.parquet"))])
    shards = shards.take(pa.compute.sort_indices(shards["url"]))
    return shards.schema == whole.schema and all(shards[c].combine_chunks().equals(whole[c].combine_chunks())
                                                 for c in whole.column_names)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--urls", type=int, default=1_000_000)
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--hosts", type=int, default=10_000)
    parser.add_argument("--days", type=int, default=20)
    parser.add_argument("--shards", type=int, default=8)
    parser.add_argument("--keep", type=Path, help="keep the synthetic log and the inputs here (and reuse them)")
    parser.add_argument("--prepare", type=Path, nargs=2, help=argparse.SUPPRESS)  # child: log, work
    parser.add_argument("--stage", nargs=3, help=argparse.SUPPRESS)  # child: name, work, shard or -
    args = parser.parse_args()
    load_at_start = os.getloadavg()
    from bench.measures import load_line
    from crawl_assets.crawler.url_policy.sharding import shard_keys

    if args.prepare:
        print(json.dumps(prepare(*args.prepare, args.urls, args.hosts, args.days)))
        return 0
    if args.stage:
        name, work, shard = args.stage
        print(json.dumps(stage(name, Path(work), args.urls, args.days, None if shard == "-" else shard, args.shards)))
        return 0
    base = args.keep or Path(tempfile.mkdtemp(prefix="priorities-per-shard-"))
    log_dir, work = base / "log", base / "work"
    sizes = ["--urls", str(args.urls), "--hosts", str(args.hosts), "--days", str(args.days),
             "--shards", str(args.shards)]
    try:
        if not any(log_dir.glob("date=*")):
            generate(log_dir, args.urls, args.rows, args.hosts, args.days)
        if not (work / "hosts.parquet").exists():
            shutil.rmtree(work, ignore_errors=True)
            work.mkdir(parents=True)
            child("--prepare", str(log_dir), str(work), *sizes)
        for folder in ("parts", "plans"):
            shutil.rmtree(work / folder, ignore_errors=True)
        (work / "plans").mkdir()
        whole = child("--stage", "whole", str(work), "-", *sizes)
        print(f"one process: {whole['seconds']:.1f} s, {whole['peak_rss_mb']:.0f} MB", flush=True)
        shards = shard_keys(args.shards)
        parts = [child("--stage", "part", str(work), s, *sizes) for s in shards]
        price = child("--stage", "price", str(work), "-", *sizes)
        plans = [child("--stage", "plan", str(work), s, *sizes) for s in shards]
        for label, runs in (("summaries", parts), ("plans", plans)):
            print(f"{label}: {sum(r['seconds'] for r in runs):.1f} s in all, the longest "
                  f"{max(r['seconds'] for r in runs):.1f} s, at most {max(r['peak_rss_mb'] for r in runs):.0f} MB",
                  flush=True)
        print(f"price and plan: {price['seconds']:.1f} s, {price['peak_rss_mb']:.0f} MB", flush=True)
        same = same_rows(work)
        print(load_line(load_at_start))
        print(f"priorities_per_shard urls={args.urls} shards={args.shards} whole_seconds={whole['seconds']:.1f} "
              f"whole_peak_rss_mb={whole['peak_rss_mb']:.0f} part_seconds_max={max(r['seconds'] for r in parts):.1f} "
              f"part_peak_rss_mb_max={max(r['peak_rss_mb'] for r in parts):.0f} price_seconds={price['seconds']:.1f} "
              f"price_peak_rss_mb={price['peak_rss_mb']:.0f} plan_seconds_max={max(r['seconds'] for r in plans):.1f} "
              f"plan_peak_rss_mb_max={max(r['peak_rss_mb'] for r in plans):.0f} "
              f"summary_mb={sum(r['bytes'] for r in parts) / 2**20:.0f} same_rows={str(same).lower()}")
        return 0 if same else 1
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
