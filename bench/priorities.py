"""Priorities benchmark: the daily change_stats + recrawl_priorities step over 10M URLs (and,
per shard, over 100M: issue 39).

    .venv/bin/python bench/priorities.py [--urls 10000000] [--rows 50000000] [--hosts 100000]
        [--days 50] [--repeat 3] [--keep DIR] [--per-shard SHARDS [--parallel N]] [--copies N]
    .venv/bin/python bench/priorities.py --urls 100000000 --rows 500000000 --hosts 1000000 \
        --copies 10 --per-shard 8 --parallel 2 --repeat 1 --keep DIR   # 100M URLs, 500M history rows

Writes a synthetic fetch log in the crawl's layout (FETCH_LOG_SCHEMA, hive date=D/shard=s00)
to a temporary directory with DuckDB, one file a day: --rows fetches of --urls URLs on --hosts
hosts over --days days (each URL visited rows/urls times, once in each of as many windows of
the days, at irregular intervals; its content changes with a per-URL probability, some visits
change only the boilerplate; a third of the hosts answer 304 when unchanged, a third send an
honest Last-Modified; 1 % of answers are 404).

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

--per-shard SHARDS: the daily step as the per-shard day runs it (settings.day_per_shard): after
change_stats, every shard's summary (priority_part: its hosts' known URLs and hosts, from
files written beforehand), the crawl's price and plan from the summaries (crawl_price: one
shard's pages in memory at a time), every shard's priorities (shard_priorities), each stage a
fresh process, one after another; the step's seconds and CPU seconds are the stages' sums,
its peak the highest stage's. --parallel N: the shards' summaries and priorities N at a time,
as the cycle runs them (max_parallel_shards, 4, at once; Dagster's queue limits runs per
shard only); the step's seconds are then the stages' wall times end to end.

--copies N: the crawl is N copies of one crawl (of urls/N URLs on hosts/N hosts, on hosts of
their own): one copy's log is generated and rebuilt (the --keep of a run at that size serves),
the copies' state of the day before is replicated from its rebuild (replicate_state, what the
rebuild of every copy writes: tests/bench/test_priorities_copies.py) and their last day is
generated. So 100M URLs with 500M history rows need the 10M log and rebuild, not 500M rows
written and read again (hours of the two cores); the rebuild figures are then one copy's.

The daily step runs --repeat times (3), each in a fresh process on the same inputs: this
machine's speed moves by 10-20 % from one minute to the next, so the median run is reported,
with the fastest and slowest, and the highest peak of them all.

Goal on this 2-core machine: at most 30 s and 4 GB for the daily step at 10M URLs, 600 s and
12 GB at 100M. The last line is
machine-readable (cpu_seconds: the CPU time of every thread of the measuring process, which
a loaded machine stretches less than the wall time; history_rows: the fetches the per-URL
state summarises; day_rows: the day's fetches folded in; rebuild_*: the one-off rebuild):
priorities urls= history_rows= seconds= peak_rss_mb= cpu_seconds= runs= seconds_min= seconds_max=
day_rows= rebuild_seconds= rebuild_peak_rss_mb= rebuild_cpu_seconds= [per_shard= change_stats_seconds=
change_stats_peak_rss_mb= parts_seconds= price_seconds= plans_seconds= price_cpu_seconds= price_peak_rss_mb=
parallel= together_peak_rss_mb=] (parallel: the shards' stages run that many at a time, as the
cycle runs them; together_peak_rss_mb: the highest sum of that many shard stages' peaks, what
the machine may hold while they run side by side, against the goal too; the per-stage
seconds are then wall times of two processes sharing the cores)
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

# The daily step's goals (seconds, peak MB) by size: 10 million URLs, and issue 39's 100 million.
GOALS = ((10_000_000, 30.0, 4096), (100_000_000, 600.0, 12288))
START_DAY = "2026-01-01"


def generate(out: Path, urls: int, rows: int, hosts: int, days: int, copies: int = 1,
             only_days: range | None = None) -> None:
    """The synthetic fetch log, written by DuckDB straight to Parquet, one file a day (never
    held in Python). Visit v of every URL falls in the v-th of `visits` equal windows of the
    days; within its window a URL's day is its place in a permutation of the URLs of its own
    for each visit (u = k A_v + B_v mod urls, A_v prime to urls), so a day's rows are a range
    of k, generated and written alone (no partitioned write, no pass over every row a day);
    the hour within the day, the change probability, versions, 404s and digests are hashes of
    (u, visit). copies: the crawl is that many copies of a crawl of urls / copies URLs on
    hosts / copies hosts (copy c's URL u0 is URL c x urls / copies + u0 on host c x hosts /
    copies + u0 mod hosts / copies, fetched when the copied crawl fetches u0, with its
    answers): see replicate_state. only_days: the days to write (all by default)."""
    import duckdb

    visits, urls_of_copy, hosts_of_copy = rows // urls, urls // copies, hosts // copies
    con = duckdb.connect()
    con.execute("SET preserve_insertion_order = false")
    con.execute("SET memory_limit = '3GB'")  # the machine is shared; DuckDB spills beyond this
    con.execute("SET enable_progress_bar = false")
    for day in only_days or range(days):
        visit = next(v for v in range(visits) if day < (v + 1) * days // visits)
        start, width = visit * days // visits, (visit + 1) * days // visits - visit * days // visits
        # the URLs whose place k in visit's permutation falls on this day of its window
        first, end = -(-(day - start) * urls_of_copy // width), -(-(day - start + 1) * urls_of_copy // width)
        multiplier, offset = _coprime(urls_of_copy, visit), (visit * 2_654_435_761) % urls_of_copy
        folder = out / f"date={date.fromisoformat(START_DAY) + timedelta(days=day)}" / "shard=s00"
        folder.mkdir(parents=True, exist_ok=True)
        con.execute(_DAY_SQL.format(first=first, end=end, a=multiplier, b=offset, urls=urls_of_copy,
                                    hosts=hosts_of_copy, copies=copies, visit=visit, day=day, start=START_DAY,
                                    out=folder / "data_0.parquet"))
    con.close()


def check_copies(urls: int, hosts: int, copies: int) -> str | None:
    """Why the crawl cannot be `copies` copies of one crawl (None: it can)."""
    if copies < 1 or urls % copies or hosts % copies or (urls // copies) % (hosts // copies):
        return (f"--copies {copies} must divide --urls ({urls}) and --hosts ({hosts}), and the hosts of a copy "
                f"its URLs ({urls // max(copies, 1)})")
    return None


def _coprime(urls: int, visit: int) -> int:
    """A multiplier prime to `urls` (so k -> k A + B mod urls is a permutation), one per visit."""
    from math import gcd

    candidate = 1_000_003 + 7_919 * visit * 2
    while gcd(candidate, urls) != 1:
        candidate += 2
    return candidate % urls if urls > 1 else 0


# One day's fetches: rows k in [first, end) of the visit's permutation. `version` counts the
# content changes so far without a window (a change at a change_p² share of visits). The
# payload's digest is a hash of (URL, version, boilerplate flip) as text: equal exactly when
# the content is (md5 of the same text took a fifth of the time).
_DAY_SQL = """
COPY (
    WITH base AS (
        SELECT (k * {a} + {b}) % {urls} AS u0, {visit} AS visit FROM range({first}, {end}) t(k)
    ),
    facts AS (
        -- (u0, h0: the URL and host in the copied crawl; u, h: in copy c)
        SELECT c * {urls} + u0 AS u, visit, c * {hosts} + u0 % {hosts} AS h, u0 % {hosts} AS h0, u0,
               (hash(u0) % 1000) / 1000.0 AS change_p, {day} + (hash(u0, visit) % 1000) / 1000.0 AS day_offset
        FROM base, range({copies}) r(c)
    ),
    versions AS (
        SELECT *, floor(visit * change_p * change_p + (hash(u0, 3) % 1000) / 1000.0) AS version,
               floor((visit - 1) * change_p * change_p + (hash(u0, 3) % 1000) / 1000.0) AS previous_version,
               (hash(u0, visit, 9) % 100) = 0 AS missing
        FROM facts
    ),
    answers AS (
        SELECT *, CASE WHEN missing THEN 404 WHEN h0 % 3 = 0 AND visit > 0 AND version = previous_version THEN 304
                       ELSE 200 END::INTEGER AS status,
               hash(u0, version, visit % 2)::VARCHAR AS digest
        FROM versions
    )
    SELECT 'https://h' || h || '.bench.test/p/' || u AS url,
           'h' || h || '.bench.test' AS host,
           0 AS depth,
           status,
           CASE WHEN status = 404 THEN 'http_4xx' WHEN status = 304 THEN 'not_modified' ELSE 'ok' END AS status_class,
           TIMESTAMPTZ '{start} 00:00:00+00' + to_microseconds(CAST(day_offset * 86400e6 AS BIGINT)) AS fetched_at,
           NULL::DOUBLE AS duration_ms,
           CASE WHEN status = 200 THEN 20000 ELSE 0 END::BIGINT AS bytes,
           'text/html' AS content_type,
           CASE WHEN status = 200 THEN digest END AS sha256,
           NULL::VARCHAR AS etag,
           CASE WHEN h0 % 3 = 1 THEN strftime(TIMESTAMPTZ '{start} 00:00:00+00'
                + to_microseconds(CAST(version * 86400e6 AS BIGINT)), '%a, %d %b %Y %H:%M:%S GMT') END
               AS last_modified,
           NULL::VARCHAR AS error, NULL::VARCHAR AS ip, 1 AS attempts, NULL::VARCHAR AS redirect_to,
           CASE WHEN status = 200 THEN digest END AS payload_digest,
           CASE WHEN status = 200 THEN xor(hash(u0, version), (visit % 2)::UBIGINT) END AS simhash,
           'response' AS warc_type, NULL::VARCHAR AS refers_to, NULL::VARCHAR AS warc_file,
           NULL::BIGINT AS warc_offset, NULL::BIGINT AS warc_length, 0 AS outlinks
    FROM answers
) TO '{out}' (FORMAT parquet, COMPRESSION zstd)
"""


def goal_of(urls: int) -> tuple[float, int]:
    """The goal of the smallest size that holds `urls` URLs (the largest's beyond)."""
    return next(((s, mb) for size, s, mb in GOALS if urls <= size), GOALS[-1][1:])


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


def measure(log_dir: Path, state: Path, out: Path, urls: int, hosts: int, days: int, copies: int = 1) -> dict:
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
    inlinks, host_table = synthetic_inlinks_and_hosts(urls, hosts)
    known = known_urls_of(np.arange(len(inlinks)), inlinks, urls, hosts, copies)
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


def synthetic_inlinks_and_hosts(urls: int, hosts: int):
    """Every known URL's in-links (URL id i: the first `urls` fetched, 5 % more known but never
    fetched, with none) and the host table (host, delay_s, flagged) of host ids 0..hosts-1."""
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(1)
    known = urls + urls // 20
    inlinks = np.concatenate([np.minimum(rng.zipf(1.8, urls) - 1, 10**6), np.zeros(known - urls, np.int64)])
    host_table = pa.table({"host": host_names(np.arange(hosts)),
                           "delay_s": np.where(rng.random(hosts) < 0.05, 3600.0, 1.0),
                           "flagged": rng.random(hosts) < 0.01})
    return inlinks, host_table


def host_names(host_ids):
    import pyarrow as pa
    import pyarrow.compute  # noqa: F401 (pa.compute)

    return pa.compute.binary_join_element_wise("h", pa.array(host_ids).cast(pa.string()), ".bench.test", "")


def host_of_url(ids, urls: int, hosts: int, copies: int = 1):
    """The host number of each URL id, as generate names it (a copy's URLs on the copy's hosts;
    the known URLs never fetched, ids from `urls` on, on the first copy's)."""
    urls_of_copy, hosts_of_copy = urls // copies, hosts // copies
    return (ids // urls_of_copy) % copies * hosts_of_copy + ids % hosts_of_copy


def known_urls_of(ids, inlinks, urls: int, hosts: int, copies: int = 1):
    """The known URLs of URL ids `ids` (url, host, inlinks) in URL order, as
    recrawl_inputs.known_urls gives them."""
    import pyarrow as pa
    import pyarrow.compute  # noqa: F401 (pa.compute)

    host_of = pa.array(host_of_url(ids, urls, hosts, copies)).cast(pa.string())
    url_strings = pa.compute.binary_join_element_wise(
        pa.compute.binary_join_element_wise("https://h", host_of, ".bench.test/p/", ""),
        pa.array(ids).cast(pa.string()), "")
    host_strings = pa.compute.binary_join_element_wise("h", host_of, ".bench.test", "")
    known = pa.table({"url": url_strings, "host": host_strings, "inlinks": inlinks[ids]})
    return known.take(pa.compute.sort_indices(known["url"]))


def prepare_shards(work: Path, urls: int, hosts: int, shards: int, copies: int = 1) -> dict:
    """The per-shard day's inputs, as the shards' steps would read them: each shard's known URLs
    (known/sNN.parquet, in URL order) and the host table with each host's shard (hosts.parquet);
    the same URLs, in-links and hosts as the one-process step's."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from crawl_assets.crawler.url_policy.sharding import shard_key, shard_of

    inlinks, host_table = synthetic_inlinks_and_hosts(urls, hosts)
    shard_of_host = np.array([shard_of(h, shards) for h in host_table["host"].to_pylist()], dtype=np.int16)
    pq.write_table(host_table.append_column("shard", pa.array([shard_key(int(i)) for i in shard_of_host])),
                   work / "hosts.parquet")
    ids = np.arange(len(inlinks))
    of_url = shard_of_host[host_of_url(ids, urls, hosts, copies)]
    (work / "known").mkdir(exist_ok=True)
    for index in range(shards):
        pq.write_table(known_urls_of(ids[of_url == index], inlinks, urls, hosts, copies),
                       work / "known" / f"{shard_key(index)}.parquet")
    return {"urls": len(ids)}


def shard_stage(name: str, log_dir: Path, state: Path, work: Path, out: Path, urls: int, days: int, shards: int,
                shard: str) -> dict:
    """Runs in a fresh process: one stage of the per-shard daily step, as its Dagster step runs it
    (change_stats[D]; priority_part[D|S]; crawl_price[D]; shard_priorities[D|S]), timed."""
    from dataclasses import replace

    from crawl_assets.crawler.settings import CrawlSettings
    from crawl_assets.crawler.url_policy.sharding import shard_keys
    from crawl_assets.pipeline.change_stats.change_stats_step import change_stats
    from crawl_assets.pipeline.change_stats.url_change_state import UrlState, url_state
    from crawl_assets.pipeline.priorities.priorities_step import PartInputs, prepare_part, write_part_urls
    from crawl_assets.pipeline.priorities.shard_priorities import (
        part_tables, plan_json, plan_of_shards, planned_rows, read_plan, shard_priorities, write_part,
    )

    import duckdb
    import pyarrow.parquet as pq

    from bench.measures import peak_rss_kb

    day = last_day(days)
    settings = replace(CrawlSettings(), daily_fetch_budget=urls // 10, shard_count=shards)
    day_files = str(log_dir / f"date={day}" / "*" / "*.parquet")
    t0, cpu = time.perf_counter(), time.process_time()
    result: dict = {}
    if name == "change_stats":
        stats = change_stats(day_files, day, settings, previous=url_state(state, (day - timedelta(days=1)).isoformat()),
                             state_root=out)
        pq.write_table(stats.hosts.select(["host", "median_rate"]), out / "host_medians.parquet")
        files = stats.state
        (out / "state.json").write_text(json.dumps({"base": str(files.base), "deltas": [str(d) for d in files.deltas],
                                                    "priors": str(files.priors), "sums": str(files.sums),
                                                    "host_events": str(files.host_events)}))
        written = files.deltas[-1] if files.deltas else files.base
        result = {"urls": stats.counts.urls, "visits": stats.counts.visits, "changes": stats.counts.changes,
                  "state_written": f"{written.name} ({written.stat().st_size >> 20} MB)"}
    else:
        doc = json.loads((out / "state.json").read_text())
        files = UrlState(Path(doc["base"]), tuple(Path(d) for d in doc["deltas"]), Path(doc["priors"]),
                         Path(doc["sums"]), Path(doc["host_events"]))
        plan_day = day + timedelta(days=1)
        if name == "part":
            con = duckdb.connect()
            hosts = con.sql(f"SELECT h.host, h.delay_s, h.flagged, m.median_rate "
                            f"FROM read_parquet('{work / 'hosts.parquet'}') h "
                            f"LEFT JOIN read_parquet('{out / 'host_medians.parquet'}') m USING (host) "
                            f"WHERE h.shard = '{shard}' ORDER BY h.host").to_arrow_table()
            con.close()
            known = pq.read_table(work / "known" / f"{shard}.parquet")
            part = PartInputs(files, None, hosts, known, hosts["host"])
            result["summary_bytes"] = write_part(part_tables(prepare_part(part, settings), hosts),
                                                 out / "parts" / shard)
        elif name == "price":
            plan = plan_of_shards({s: out / "parts" / s for s in shard_keys(shards)}, plan_day, settings)
            (out / "price.json").write_bytes(plan_json(plan))
            pq.write_table(planned_rows(plan), out / "planned.parquet")
            result |= {"planned": plan.counts.planned, "capped_hosts": plan.counts.capped_hosts}
        else:
            plan = read_plan((out / "price.json").read_bytes(), pq.read_table(out / "planned.parquet"), shard)
            priced = shard_priorities(out / "parts" / shard, plan, shard, plan_day, settings)
            write_part_urls(priced.urls, out / "plans" / f"{shard}.parquet")
    result |= {"seconds": time.perf_counter() - t0, "cpu_seconds": time.process_time() - cpu,
               "peak_rss_mb": peak_rss_kb() / 1024}
    if name == "change_stats":  # (after the figures: what the summary line reports of the day)
        from crawl_assets.pipeline.change_stats.url_change_state import register_change_stats

        con = duckdb.connect()
        result["day_rows"] = con.execute(f"SELECT count(*) FROM read_parquet('{day_files}')").fetchone()[0]
        register_change_stats(con, stats.state)
        result["estimators"] = con.execute("SELECT estimator, count(*) FROM change_stats GROUP BY 1 ORDER BY 1") \
            .fetchall()
    return result


def per_shard_day(log_dir: Path, state: Path, work: Path, out: Path, sizes: list[str], shards: int,
                  parallel: int = 1) -> dict:
    """The per-shard daily step: change_stats, every shard's summary, the crawl's price and plan,
    every shard's priorities, each stage a fresh process (as one machine runs the day's steps);
    the shards' stages `parallel` at a time (the cycle submits max_parallel_shards of them at
    once, Dagster's queue runs them side by side: dagster.yaml limits runs per shard only),
    else one after another. The day's seconds are the stages' wall times end to end, its CPU
    seconds their sum, its peak the highest stage's, and with `parallel` the highest sum of the
    `parallel` highest peaks of one kind of shard stage (what running together may hold)."""
    from concurrent.futures import ThreadPoolExecutor

    from crawl_assets.crawler.url_policy.sharding import shard_keys

    (out / "plans").mkdir(parents=True)
    paths = [str(log_dir), str(state), str(work), str(out)]

    def stage(name: str, shard: str = "-") -> dict:  # (each stage's figures printed as it ends)
        done = child("--shard-stage", name, *paths, shard, *sizes)
        print(f"  {name} {shard}: {done['seconds']:.1f} s, {done['cpu_seconds']:.1f} CPU s, "
              f"{done['peak_rss_mb']:.0f} MB", flush=True)
        return done

    def every_shard(name: str) -> tuple[list[dict], float]:  # the shards' runs and their wall time
        t0 = time.perf_counter()
        with ThreadPoolExecutor(max(parallel, 1)) as pool:
            runs = list(pool.map(lambda shard: stage(name, shard), shard_keys(shards)))
        return runs, time.perf_counter() - t0

    stages, wall = {"change_stats": [stage("change_stats")]}, {}
    stages["part"], wall["part"] = every_shard("part")
    stages["price"] = [stage("price")]
    stages["plan"], wall["plan"] = every_shard("plan")
    every = [run for runs in stages.values() for run in runs]
    cs, price = stages["change_stats"][0], stages["price"][0]
    together = max(sum(sorted((r["peak_rss_mb"] for r in stages[kind]), reverse=True)[:max(parallel, 1)])
                   for kind in ("part", "plan"))
    seconds = cs["seconds"] + wall["part"] + price["seconds"] + wall["plan"]
    return {"seconds": seconds, "cpu_seconds": sum(r["cpu_seconds"] for r in every),
            "peak_rss_mb": max(r["peak_rss_mb"] for r in every), "together_peak_rss_mb": together,
            "change_stats_s": cs["seconds"], "change_stats_cpu_s": cs["cpu_seconds"],
            "change_stats_peak_rss_mb": cs["peak_rss_mb"],
            "priorities_s": seconds - cs["seconds"],
            "parts_s": wall["part"],
            "part_peak_rss_mb": max(r["peak_rss_mb"] for r in stages["part"]),
            "price_s": price["seconds"], "price_cpu_s": price["cpu_seconds"], "price_peak_rss_mb": price["peak_rss_mb"],
            "plans_s": wall["plan"],
            "plan_peak_rss_mb": max(r["peak_rss_mb"] for r in stages["plan"]),
            "summary_mb": sum(r["summary_bytes"] for r in stages["part"]) / 2**20,
            "urls": cs["urls"], "visits": cs["visits"], "changes": cs["changes"], "state_written": cs["state_written"],
            "day_rows": cs["day_rows"], "estimators": cs["estimators"], "planned": price["planned"],
            "capped_hosts": price["capped_hosts"]}


def replicate_state(source: Path, day: str, target: Path, urls: int, hosts: int, copies: int) -> None:
    """change_stats[day]'s state of a crawl of `copies` copies (generate's copies) from the state
    of one copy (its rebuild under data root `source`, urls / copies URLs on hosts / copies
    hosts), written under data root `target` as the rebuild of every copy writes it: each URL's
    and host's rows once a copy, renamed (and its hashes k1, k2 those of its new name); every
    other column as the copy's. change_stats is per URL and per host (pools are a URL pattern
    within a host, host events per host; everyone's prior is a ratio of sums every copy adds
    the same to), so this is the rebuild of the copies without reading their history again
    (tests/bench/test_priorities_copies.py compares the two)."""
    import duckdb

    from crawl_assets.pipeline.change_stats.pool_sums import pool_priors
    from crawl_assets.pipeline.change_stats.url_change_state import url_state
    from crawl_assets.storage.layout import (host_events_file, pattern_priors_file, pool_sums_file,
                                             url_state_base_file)

    state = url_state(source, day)
    if state.deltas or state.sums is None or state.host_events is None:
        raise ValueError(f"the state under {source} for {day} is not a rebuild's (a base with its sums and "
                         "host events): replicate the full rebuild's state")
    urls_of_copy, hosts_of_copy = urls // copies, hosts // copies
    host = f"'h' || (c * {hosts_of_copy} + CAST(regexp_extract(host, '^h([0-9]+)[.]', 1) AS BIGINT)) || '.bench.test'"
    url = (f"'https://h' || (c * {hosts_of_copy} + CAST(regexp_extract(url, '^https://h([0-9]+)[.]', 1) AS BIGINT))"
           f" || '.bench.test/p/' || (c * {urls_of_copy} + CAST(regexp_extract(url, '/p/([0-9]+)$', 1) AS BIGINT))")
    con = duckdb.connect()
    con.execute("SET preserve_insertion_order = false")
    con.execute("SET memory_limit = '3GB'")
    con.execute("SET enable_progress_bar = false")
    for source_file, target_file, renamed in (
            (state.base, url_state_base_file(target, day),
             {"k1": "hash(new_url)", "k2": "hash(new_url, 1)", "url": "new_url", "host": host}),
            (state.sums, pool_sums_file(target, day), {"host": host}),
            (state.host_events, host_events_file(target, day), {"host": host})):
        columns = [r[0] for r in con.execute(f"DESCRIBE SELECT * FROM read_parquet('{source_file}')").fetchall()]
        listed = ", ".join(f"{renamed[c]} AS {c}" if c in renamed else c for c in columns)
        new_url = url if "url" in columns else "NULL"
        target_file.parent.mkdir(parents=True, exist_ok=True)
        con.execute(f"COPY (SELECT {listed} FROM (SELECT *, {new_url} AS new_url FROM read_parquet('{source_file}'), "
                    f"range({copies}) r(c))) TO '{target_file}' (FORMAT parquet)")
    # the priors from the copies' sums (everyone's prior is shrunk with pseudo-days: not a copy's)
    con.execute(f"CREATE TEMP TABLE pool_sums AS SELECT * FROM read_parquet('{pool_sums_file(target, day)}')")
    pool_priors(con)
    con.execute(f"COPY (SELECT * FROM priors) TO '{pattern_priors_file(target, day)}' (FORMAT parquet)")
    con.close()


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
    parser.add_argument("--repeat", type=int, default=3, help="daily-step runs; the median is reported (default 3; "
                        "0: make the inputs only, with --keep)")
    parser.add_argument("--keep", type=Path, help="write the synthetic log (and the rebuild's state) here, keep "
                        "them and reuse them")
    parser.add_argument("--copies", type=int, default=1, help="the crawl as that many copies of one crawl (of "
                        "urls / copies URLs on hosts / copies hosts): one copy's log is generated and rebuilt, the "
                        "copies' state replicated from it, and their last day generated (default 1)")
    parser.add_argument("--rebuild", type=Path, nargs=2, help=argparse.SUPPRESS)  # child: log, state
    parser.add_argument("--per-shard", type=int, metavar="SHARDS", help="run the daily step per shard in SHARDS "
                        "shards (priority_part, crawl_price, shard_priorities), each stage a fresh process")
    parser.add_argument("--parallel", type=int, default=1, help="with --per-shard: the shards' stages run that many "
                        "at a time (default 1), as the cycle's max_parallel_shards runs them")
    parser.add_argument("--measure", type=Path, nargs=3, help=argparse.SUPPRESS)  # child: log, state, out
    parser.add_argument("--prepare-shards", type=Path, help=argparse.SUPPRESS)  # child: work
    parser.add_argument("--shard-stage", nargs=6, help=argparse.SUPPRESS)  # child: name, log, state, work, out, shard
    args = parser.parse_args()
    load_at_start = os.getloadavg()
    from bench.measures import load_line
    if args.rebuild:
        print(json.dumps(rebuild(*args.rebuild, args.urls, args.days)))
        return 0
    if args.measure:
        print(json.dumps(measure(*args.measure, args.urls, args.hosts, args.days, args.copies)))
        return 0
    if args.prepare_shards:
        print(json.dumps(prepare_shards(args.prepare_shards, args.urls, args.hosts, args.per_shard, args.copies)))
        return 0
    if args.shard_stage:
        name, *paths, shard = args.shard_stage
        print(json.dumps(shard_stage(name, *map(Path, paths), args.urls, args.days, args.per_shard, shard)))
        return 0
    if args.rows < args.urls:
        parser.error("--rows must be at least --urls (every URL fetched at least once)")
    if args.repeat < 0:
        parser.error("--repeat must be at least 0 (0: make and keep the inputs, measure nothing)")
    if why := check_copies(args.urls, args.hosts, args.copies):
        parser.error(why)
    copies = args.copies
    log_dir = history = args.keep or Path(tempfile.mkdtemp(prefix="priorities-bench-"))
    work = Path(tempfile.mkdtemp(prefix="priorities-bench-out-"))
    sizes = ["--urls", str(args.urls), "--hosts", str(args.hosts), "--days", str(args.days), "--copies", str(copies)]
    if args.per_shard:
        sizes += ["--per-shard", str(args.per_shard)]
    try:
        t0 = time.perf_counter()
        # (with --copies, the log and rebuild below are one copy's: urls / copies URLs ...)
        one = {"urls": args.urls // copies, "rows": args.rows // copies, "hosts": args.hosts // copies}
        if not any(log_dir.glob("date=*")):
            generate(log_dir, one["urls"], one["rows"], one["hosts"], args.days)
        rows = (args.rows // args.urls) * args.urls
        print(f"synthetic fetch log{' of one copy' if copies > 1 else ''}: {rows // copies:,} rows for "
              f"{one['urls']:,} URLs on {one['hosts']:,} hosts over {args.days} days, written in "
              f"{time.perf_counter() - t0:.0f} s", flush=True)
        # With --keep, the rebuild's state (a data root holding change_stats/date=D/) is kept
        # beside the log too, and reused (with its figures).
        state = (args.keep or work) / "state"
        figures = (args.keep or work) / "rebuild.json"
        if args.keep and state.exists() and figures.exists():
            built = json.loads(figures.read_text())
        else:
            built = child("--rebuild", str(log_dir), str(state), "--urls", str(one["urls"]), "--days", str(args.days))
            figures.write_text(json.dumps(built))
        print(f"one-off full rebuild of change_stats up to the day before ({built['urls']:,} URLs): "
              f"{built['seconds']:.1f} s, {built['peak_rss_mb']:.0f} MB, {built['cpu_seconds']:.1f} CPU s", flush=True)
        if copies > 1:  # the crawl of copies: its last day's log, and its state the day before (replicated)
            copied = (args.keep or work) / f"copies-{copies}"
            if not (copied / "made.json").exists():
                shutil.rmtree(copied, ignore_errors=True)
                t0 = time.perf_counter()
                generate(copied / "log", args.urls, args.rows, args.hosts, args.days, copies,
                         only_days=range(args.days - 1, args.days))
                made = {"log_seconds": time.perf_counter() - t0}
                replicate_state(state, (last_day(args.days) - timedelta(days=1)).isoformat(), copied / "state",
                                args.urls, args.hosts, copies)
                made["state_seconds"] = time.perf_counter() - t0 - made["log_seconds"]
                (copied / "made.json").write_text(json.dumps(made))
            made = json.loads((copied / "made.json").read_text())
            print(f"{copies} copies ({args.urls:,} URLs, {rows:,} history rows): their last day's log written in "
                  f"{made['log_seconds']:.0f} s, their state of the day before replicated from one copy's in "
                  f"{made['state_seconds']:.0f} s", flush=True)
            log_dir, state = copied / "log", copied / "state"
        # The daily step, --repeat times, each in a fresh process: the machine's speed moves by
        # 10-20 % from one minute to the next, so the median run is reported, with the range.
        if args.per_shard:  # each shard's known URLs and the hosts' shards, kept with --keep
            inputs = (args.keep or work) / f"shards-{args.per_shard}-of-{args.urls}"
            if not (inputs / "hosts.parquet").exists():
                shutil.rmtree(inputs, ignore_errors=True)
                inputs.mkdir(parents=True)
                child("--prepare-shards", str(inputs), *sizes)
        if args.repeat == 0:
            return 0
        runs = []
        for run in range(args.repeat):
            (work / f"day{run}").mkdir()
            if args.per_shard:
                runs.append(per_shard_day(log_dir, state, inputs, work / f"day{run}", sizes, args.per_shard,
                                          args.parallel))
                shutil.rmtree(work / f"day{run}", ignore_errors=True)  # (a 100M day's files are some 20 GB)
            else:
                runs.append(child("--measure", str(log_dir), str(state), str(work / f"day{run}"), *sizes))
            last = runs[-1]
            print(f"daily step, run {run + 1}: {last['seconds']:.1f} s (change_stats {last['change_stats_s']:.1f}, "
                  f"recrawl_priorities {last['priorities_s']:.1f}), {last['cpu_seconds']:.1f} CPU s, "
                  f"{last['peak_rss_mb']:.0f} MB", flush=True)
            if args.per_shard:
                print(f"  per shard: change_stats {last['change_stats_s']:.1f} s ({last['change_stats_cpu_s']:.1f} CPU s, "
                      f"{last['change_stats_peak_rss_mb']:.0f} MB), summaries {last['parts_s']:.1f} s (at most "
                      f"{last['part_peak_rss_mb']:.0f} MB), price and plan {last['price_s']:.1f} s "
                      f"({last['price_peak_rss_mb']:.0f} MB), priorities {last['plans_s']:.1f} s (at most "
                      f"{last['plan_peak_rss_mb']:.0f} MB); summaries {last['summary_mb']:.0f} MB", flush=True)
        result = sorted(runs, key=lambda r: r["seconds"])[len(runs) // 2]
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if args.keep is None:
            shutil.rmtree(history, ignore_errors=True)
    print(f"change_stats_s={result['change_stats_s']:.1f} (CPU {result['change_stats_cpu_s']:.1f} s) "
          f"priorities_s={result['priorities_s']:.1f}")
    print(f"daily step: change_stats folded {result['day_rows']:,} fetches of the day into {result['urls']:,} URLs "
          f"and wrote {result['state_written']}; "
          f"{result['visits']:,} visits, {result['changes']:,} changes, {result['planned']:,} planned, "
          f"{result['capped_hosts']} hosts at their cap")
    print("estimators: " + ", ".join(f"{name} {n:,}" for name, n in result["estimators"]))
    peak = max(r["peak_rss_mb"] for r in runs)
    together = max(r.get("together_peak_rss_mb", 0) for r in runs)  # (shard stages run side by side)
    fastest, slowest = min(r["seconds"] for r in runs), max(r["seconds"] for r in runs)
    goal_seconds, goal_mb = goal_of(args.urls)
    ok = result["seconds"] <= goal_seconds and max(peak, together) <= goal_mb
    print(f"goal (<= {goal_seconds:.0f} s, <= {goal_mb} MB): {'met' if ok else 'NOT met'}")
    print(load_line(load_at_start))
    print(f"priorities urls={args.urls} history_rows={rows} seconds={result['seconds']:.1f} "
          f"peak_rss_mb={peak:.0f} cpu_seconds={result['cpu_seconds']:.1f} runs={len(runs)} "
          f"seconds_min={fastest:.1f} seconds_max={slowest:.1f} "
          f"day_rows={result['day_rows']} rebuild_seconds={built['seconds']:.1f} "
          f"rebuild_peak_rss_mb={built['peak_rss_mb']:.0f} rebuild_cpu_seconds={built['cpu_seconds']:.1f}"
          + (f" per_shard={args.per_shard} change_stats_seconds={result['change_stats_s']:.1f} "
             f"change_stats_peak_rss_mb={result['change_stats_peak_rss_mb']:.0f} parts_seconds={result['parts_s']:.1f} "
             f"price_seconds={result['price_s']:.1f} plans_seconds={result['plans_s']:.1f} "
             f"price_cpu_seconds={result['price_cpu_s']:.1f} price_peak_rss_mb={result['price_peak_rss_mb']:.0f} "
             f"parallel={args.parallel} together_peak_rss_mb={together:.0f}" if args.per_shard else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
