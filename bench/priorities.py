"""Priorities benchmark: the daily change_stats + recrawl_priorities step over 10M URLs.

    .venv/bin/python bench/priorities.py [--urls 10000000] [--rows 50000000] [--hosts 100000]
        [--days 50] [--repeat 3] [--keep DIR]

Writes a synthetic fetch log in the crawl's layout (FETCH_LOG_SCHEMA, hive date=D/shard=s00)
to a temporary directory with DuckDB: --rows fetches of --urls URLs on --hosts hosts over
--days days (each URL visited rows/urls times at irregular intervals; its content changes
with a per-URL probability, some visits change only the boilerplate; a third of the hosts
answer 304 when unchanged, a third send an honest Last-Modified; 1 % of answers are 404).

Then, each in a fresh process (so its peak RSS, VmHWM, is its own):

1. the one-off full rebuild: change_stats of every fetch up to the day before the last day
   (what a crawl runs once, or after a change to the rules), which writes the per-URL state
   as a base file (pipeline/change_stats/url_change_state.py);
2. the daily step, what runs every day and what the goal is about: change_stats of the last
   day, folding that day's fetches (rows/days of them) into the rebuild's per-URL state and
   writing a delta of the URLs fetched that day plus the day's pattern priors, then
   recrawl_priorities over the view of every URL's rates (base + delta + priors), in-links
   for every URL, a host table with delays, every URL plus 5 % never fetched, for the next
   day, with a daily budget of 10 % of the URLs, written to Parquet.

The daily step runs --repeat times (3), each in a fresh process on the same inputs: this
machine's speed moves by 10-20 % from one minute to the next, so the median run is reported,
with the fastest and slowest, and the highest peak of them all.

Goal on this 2-core machine: at most 30 s and 4 GB for the daily step. The last line is
machine-readable (cpu_seconds: the CPU time of every thread of the measuring process, which
a loaded machine stretches less than the wall time; history_rows: the fetches the per-URL
state summarises; day_rows: the day's fetches folded in; rebuild_*: the one-off rebuild):
priorities urls= history_rows= seconds= peak_rss_mb= cpu_seconds= runs= seconds_min= seconds_max=
day_rows= rebuild_seconds= rebuild_peak_rss_mb= rebuild_cpu_seconds=
"""

from __future__ import annotations

import argparse
import os
import json
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

GOAL_SECONDS, GOAL_RSS_MB = 30.0, 4096
START_DAY = "2026-01-01"


def generate(out: Path, urls: int, rows: int, hosts: int, days: int) -> None:
    """The synthetic fetch log, written by DuckDB straight to Parquet (never held in Python)."""
    import duckdb

    visits = rows // urls
    con = duckdb.connect()
    con.execute("SET preserve_insertion_order = false")
    con.execute("SET memory_limit = '3GB'")  # the machine is shared; DuckDB spills beyond this
    # Each row: the visit-th fetch of URL u. Visit days spread over the window with jitter;
    # `version` counts content changes so far (a per-URL change probability per visit).
    con.execute(f"""
        COPY (
            WITH base AS (
                SELECT i % {urls} AS u, i // {urls} AS visit FROM range({visits * urls}) t(i)
            ),
            facts AS (
                SELECT u, visit, u % {hosts} AS h,
                       (hash(u) % 1000) / 1000.0 AS change_p,
                       least({days - 1}, visit * {days / visits} + (hash(u, visit) % 1000) / 1000.0
                             * {days / visits}) AS day_offset
                FROM base
            ),
            versions AS (
                -- Changes so far without a window: a change at a change_p² share of visits.
                SELECT *, floor(visit * change_p * change_p + (hash(u, 3) % 1000) / 1000.0) AS version,
                       floor((visit - 1) * change_p * change_p + (hash(u, 3) % 1000) / 1000.0) AS previous_version,
                       (hash(u, visit, 9) % 100) = 0 AS missing
                FROM facts
            )
            SELECT 'https://h' || h || '.bench.test/p/' || u AS url,
                   'h' || h || '.bench.test' AS host,
                   0 AS depth,
                   CASE WHEN missing THEN 404 WHEN h % 3 = 0 AND visit > 0 AND version = previous_version THEN 304
                        ELSE 200 END::INTEGER AS status,
                   CASE WHEN status = 404 THEN 'http_4xx' WHEN status = 304 THEN 'not_modified' ELSE 'ok' END
                       AS status_class,
                   TIMESTAMPTZ '{START_DAY} 00:00:00+00' + to_microseconds(CAST(day_offset * 86400e6 AS BIGINT))
                       AS fetched_at,
                   NULL::DOUBLE AS duration_ms,
                   CASE WHEN status = 200 THEN 20000 ELSE 0 END::BIGINT AS bytes,
                   'text/html' AS content_type,
                   CASE WHEN status = 200 THEN md5(u || ':' || version || ':' || (visit % 2)) END AS sha256,
                   NULL::VARCHAR AS etag,
                   CASE WHEN h % 3 = 1 THEN strftime(TIMESTAMPTZ '{START_DAY} 00:00:00+00'
                        + to_microseconds(CAST(version * 86400e6 AS BIGINT)), '%a, %d %b %Y %H:%M:%S GMT') END
                       AS last_modified,
                   NULL::VARCHAR AS error, NULL::VARCHAR AS ip, 1 AS attempts, NULL::VARCHAR AS redirect_to,
                   CASE WHEN status = 200 THEN md5(u || ':' || version || ':' || (visit % 2)) END AS payload_digest,
                   CASE WHEN status = 200 THEN xor(hash(u, version), (visit % 2)::UBIGINT) END AS simhash,
                   'response' AS warc_type, NULL::VARCHAR AS refers_to, NULL::VARCHAR AS warc_file,
                   NULL::BIGINT AS warc_offset, NULL::BIGINT AS warc_length, 0 AS outlinks,
                   strftime(DATE '{START_DAY}' + CAST(floor(day_offset) AS INTEGER), '%Y-%m-%d') AS date,
                   's00' AS shard
            FROM versions
        ) TO '{out}' (FORMAT parquet, PARTITION_BY (date, shard), OVERWRITE_OR_IGNORE)
    """)
    con.close()


def rebuild(log_dir: Path, state: Path, urls: int, days: int) -> dict:
    """Runs in a fresh process: the full rebuild up to the day before the last, timed; its
    base file goes under the data root `state`."""
    from dataclasses import replace

    from bench.measures import peak_rss_kb
    from crawl_assets.crawler.settings import CrawlSettings
    from crawl_assets.pipeline.change_stats.change_stats_step import change_stats

    settings = replace(CrawlSettings(), daily_fetch_budget=urls // 10)
    t0, cpu = time.perf_counter(), time.process_time()
    stats = change_stats(str(log_dir / "date=*" / "*" / "*.parquet"), last_day(days) - timedelta(days=1), settings,
                         state_root=state)
    return {"seconds": time.perf_counter() - t0, "cpu_seconds": time.process_time() - cpu,
            "peak_rss_mb": peak_rss_kb() / 1024, "urls": stats.counts.urls}


def measure(log_dir: Path, state: Path, out: Path, urls: int, hosts: int, days: int) -> dict:
    """Runs in a fresh process: the daily step of the last day, timed, with its peak RSS
    (its state files go under the data root `out`)."""
    from dataclasses import replace

    # (the crawl's package first, as a Dagster run imports it: it sets numpy's memory policy)
    from crawl_assets.crawler.settings import CrawlSettings
    from crawl_assets.pipeline.change_stats.change_stats_step import change_stats
    from crawl_assets.pipeline.priorities.priorities_step import recrawl_priorities
    from crawl_assets.pipeline.change_stats.url_change_state import register_change_stats, url_state

    import duckdb
    import numpy as np
    import pyarrow as pa

    from bench.measures import peak_rss_kb

    day = last_day(days)
    settings = replace(CrawlSettings(), daily_fetch_budget=urls // 10)
    # Inputs the pipeline would read from Parquet: in-links, hosts, the known URLs.
    rng = np.random.default_rng(1)
    ids = np.arange(urls + urls // 20)
    host_of = ids % hosts
    url_strings = pa.compute.binary_join_element_wise(
        pa.compute.binary_join_element_wise("https://h", pa.array(host_of).cast(pa.string()), ".bench.test/p/", ""),
        pa.array(ids).cast(pa.string()), "")
    host_strings = pa.compute.binary_join_element_wise("h", pa.array(host_of).cast(pa.string()), ".bench.test", "")
    # (the known URLs carry their in-links and come in URL order, as recrawl_inputs.known_urls
    # gives them; the 5 % never fetched have none)
    inlinks = np.concatenate([np.minimum(rng.zipf(1.8, urls) - 1, 10**6), np.zeros(len(ids) - urls, np.int64)])
    known = pa.table({"url": url_strings, "host": host_strings, "inlinks": inlinks})
    known = known.take(pa.compute.sort_indices(known["url"]))
    host_table = pa.table({"host": host_strings.slice(0, hosts),
                           "delay_s": np.where(rng.random(hosts) < 0.05, 3600.0, 1.0),
                           "flagged": rng.random(hosts) < 0.01})
    day_files = str(log_dir / f"date={day}" / "*" / "*.parquet")
    previous = url_state(state, (day - timedelta(days=1)).isoformat())
    t0, cpu = time.perf_counter(), time.process_time()
    stats = change_stats(day_files, day, settings, previous=previous, state_root=out)
    t1, cpu1 = time.perf_counter(), time.process_time()
    # Each host's median change rate from change_stats' host table, as recrawl_inputs.host_facts adds it.
    joining = duckdb.connect()
    joining.register("medians", stats.hosts.select(["host", "median_rate"]))
    joining.register("host_table", host_table)
    with_medians = joining.sql("SELECT h.*, m.median_rate FROM host_table h LEFT JOIN medians m USING (host)") \
        .to_arrow_table()
    plan = recrawl_priorities(stats.state, None, with_medians, known, day + timedelta(days=1),
                              settings, urls_out=out / "url_priorities.parquet")
    t2 = time.perf_counter()
    written = stats.state.deltas[-1] if stats.state.deltas else stats.state.base
    result = {"change_stats_s": t1 - t0, "priorities_s": t2 - t1, "seconds": t2 - t0,
              "change_stats_cpu_s": cpu1 - cpu, "state_written": f"{written.name} ({written.stat().st_size >> 20} MB)",
              "cpu_seconds": time.process_time() - cpu, "peak_rss_mb": peak_rss_kb() / 1024,
              "urls": stats.counts.urls, "visits": stats.counts.visits, "changes": stats.counts.changes,
              "day_visits": stats.counts.day_visits, "planned": plan.counts.planned,
              "capped_hosts": plan.counts.capped_hosts}
    con = duckdb.connect()
    result["day_rows"] = con.execute(f"SELECT count(*) FROM read_parquet('{day_files}')").fetchone()[0]
    register_change_stats(con, stats.state)
    result["estimators"] = con.execute("SELECT estimator, count(*) FROM change_stats GROUP BY 1 ORDER BY 1").fetchall()
    return result


def last_day(days: int) -> date:
    return date.fromisoformat(START_DAY) + timedelta(days=days - 1)


def child(*args: str) -> dict:
    """One measuring process; its result is its last stdout line, as JSON."""
    done = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        print(done.stderr, file=sys.stderr)
        raise SystemExit(1)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--urls", type=int, default=10_000_000)
    parser.add_argument("--rows", type=int, default=50_000_000)
    parser.add_argument("--hosts", type=int, default=100_000)
    parser.add_argument("--days", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3, help="daily-step runs; the median is reported (default 3)")
    parser.add_argument("--keep", type=Path, help="write the synthetic log (and the rebuild's state) here, keep "
                        "them and reuse them")
    parser.add_argument("--rebuild", type=Path, nargs=2, help=argparse.SUPPRESS)  # child: log, state
    parser.add_argument("--measure", type=Path, nargs=3, help=argparse.SUPPRESS)  # child: log, state, out
    args = parser.parse_args()
    load_at_start = os.getloadavg()
    from bench.measures import load_line
    if args.rebuild:
        print(json.dumps(rebuild(*args.rebuild, args.urls, args.days)))
        return 0
    if args.measure:
        print(json.dumps(measure(*args.measure, args.urls, args.hosts, args.days)))
        return 0
    if args.rows < args.urls:
        parser.error("--rows must be at least --urls (every URL fetched at least once)")
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    log_dir = args.keep or Path(tempfile.mkdtemp(prefix="priorities-bench-"))
    work = Path(tempfile.mkdtemp(prefix="priorities-bench-out-"))
    sizes = ["--urls", str(args.urls), "--hosts", str(args.hosts), "--days", str(args.days)]
    try:
        t0 = time.perf_counter()
        if not any(log_dir.glob("date=*")):
            generate(log_dir, args.urls, args.rows, args.hosts, args.days)
        rows = (args.rows // args.urls) * args.urls
        print(f"synthetic fetch log: {rows:,} rows for {args.urls:,} URLs on {args.hosts:,} hosts "
              f"over {args.days} days, written in {time.perf_counter() - t0:.0f} s", flush=True)
        # With --keep, the rebuild's state (a data root holding change_stats/date=D/) is kept
        # beside the log too, and reused (with its figures).
        state = (args.keep or work) / "state"
        figures = (args.keep or work) / "rebuild.json"
        if args.keep and state.exists() and figures.exists():
            built = json.loads(figures.read_text())
        else:
            built = child("--rebuild", str(log_dir), str(state), *sizes)
            figures.write_text(json.dumps(built))
        print(f"one-off full rebuild of change_stats up to the day before ({built['urls']:,} URLs): "
              f"{built['seconds']:.1f} s, {built['peak_rss_mb']:.0f} MB, {built['cpu_seconds']:.1f} CPU s", flush=True)
        # The daily step, --repeat times, each in a fresh process: the machine's speed moves by
        # 10-20 % from one minute to the next, so the median run is reported, with the range.
        runs = []
        for run in range(args.repeat):
            (work / f"day{run}").mkdir()
            runs.append(child("--measure", str(log_dir), str(state), str(work / f"day{run}"), *sizes))
            last = runs[-1]
            print(f"daily step, run {run + 1}: {last['seconds']:.1f} s (change_stats {last['change_stats_s']:.1f}, "
                  f"recrawl_priorities {last['priorities_s']:.1f}), {last['cpu_seconds']:.1f} CPU s, "
                  f"{last['peak_rss_mb']:.0f} MB", flush=True)
        result = sorted(runs, key=lambda r: r["seconds"])[len(runs) // 2]
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if args.keep is None:
            shutil.rmtree(log_dir, ignore_errors=True)
    print(f"change_stats_s={result['change_stats_s']:.1f} (CPU {result['change_stats_cpu_s']:.1f} s) "
          f"priorities_s={result['priorities_s']:.1f}")
    print(f"daily step: change_stats folded {result['day_rows']:,} fetches of the day into {result['urls']:,} URLs "
          f"and wrote {result['state_written']}; "
          f"{result['visits']:,} visits, {result['changes']:,} changes, {result['planned']:,} planned, "
          f"{result['capped_hosts']} hosts at their cap")
    print("estimators: " + ", ".join(f"{name} {n:,}" for name, n in result["estimators"]))
    peak = max(r["peak_rss_mb"] for r in runs)
    fastest, slowest = min(r["seconds"] for r in runs), max(r["seconds"] for r in runs)
    ok = result["seconds"] <= GOAL_SECONDS and peak <= GOAL_RSS_MB
    print(f"goal (<= {GOAL_SECONDS:.0f} s, <= {GOAL_RSS_MB} MB): {'met' if ok else 'NOT met'}")
    print(load_line(load_at_start))
    print(f"priorities urls={args.urls} history_rows={rows} seconds={result['seconds']:.1f} "
          f"peak_rss_mb={peak:.0f} cpu_seconds={result['cpu_seconds']:.1f} runs={len(runs)} "
          f"seconds_min={fastest:.1f} seconds_max={slowest:.1f} "
          f"day_rows={result['day_rows']} rebuild_seconds={built['seconds']:.1f} "
          f"rebuild_peak_rss_mb={built['peak_rss_mb']:.0f} rebuild_cpu_seconds={built['cpu_seconds']:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
