"""Frontier benchmark: the day's frontier snapshot (the pipeline's frontier step plus writing
one Parquet file per shard) over many known URLs on many hosts.

Synthetic crawl outputs are generated with DuckDB under a temporary data root: one seed per
host, link files of two earlier days (ordinary pages, calendar-style query URLs that meet the
pattern budget, some repeated-segment traps, and duplicates across days), and a fetch log of
the day before for a fifth of the URLs (so validators are joined), and the recrawl plan made
the evening before (recrawl_priorities' file: every known URL, a tenth of them planned, with
plan ranks and front-queue levels). The step then runs in a fresh process, so the peak RSS
is the step's own (its VmHWM: ru_maxrss would carry the generating parent's peak).

    python bench/frontier.py [--urls 10000000] [--hosts 100000] [--root DIR]

(--root: generate into DIR, or reuse what an earlier run with the same sizes generated there.)
The lines above the last say how much of the wall time some task on the machine waited for a
core or for I/O (Linux's pressure stall figures) and how much the step wrote to disk, which
tell a run stretched by the machine's other work from one stretched by DuckDB's spills.

Last line: `frontier urls= hosts= seconds= peak_rss_mb= cpu_seconds=` (and per_shard=1,
shard_steps=, frontier_memory_mb= when given; cpu_seconds: the CPU time
of every thread of the measuring process, which a loaded machine stretches less than the wall
time; urls: known URLs read; the kept
frontier and the left-out counts are printed above it).
"""

from __future__ import annotations

import argparse
import os
import dataclasses
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DAY = "2026-11-29"
SHARD_FILES = 8  # link and fetch-log files per day, as the fetch batches would write them

# The seeds, one a host.
SEEDS_SQL = """
COPY (SELECT 'http://h' || i || '.bench.test/' AS url, 'h' || i || '.bench.test' AS host,
             'bench.txt:' || i AS source
      FROM range({hosts}) t(i)) TO '{seeds}' (FORMAT parquet)
"""

# Link i: a page, a calendar-style query URL that meets the pattern budget, a repeated-segment
# trap or a duplicate across days, on a host of skewed size (the product of two uniform draws:
# a few large hosts meet the host and pattern budgets, most are small). Link i is written on
# day i % 2 by shard i % SHARD_FILES: each file is the rows of one residue, generated alone, so
# no step of the generation holds more than a file's rows.
LINKS_SQL = """
WITH numbered AS (
    SELECT i, ((hash(i) % {hosts}) * (hash(i + {urls}) % {hosts})) // {hosts} AS h
    FROM range({shard}, {urls}, {shard_files}) t(i)
)
SELECT 'http://h' || h || '.bench.test/' AS source,
       'http://h' || h || '.bench.test' ||
       CASE WHEN i % 20 < 14 THEN '/p/' || i || '.html'
            WHEN i % 20 < 17 THEN '/calendar?month=' || i || '&view=day'
            WHEN i % 20 < 18 THEN '/a/a/a/a/' || i
            ELSE '/news/' || (i // 7) || '/story' END AS target,
       'h' || h || '.bench.test' AS target_host,
       (1 + i % 5)::INTEGER AS depth, true AS is_new, NULL::VARCHAR AS dropped_reason
FROM numbered
"""


# The plan for DAY: every known URL (seeds and link targets), a tenth planned, ranked by a hash.
# The known URLs are made distinct one hash partition (a quarter) at a time into a table of a
# database file (one hash aggregate over 100 million URL strings outgrew DuckDB's 6 GB,
# spilling or not), then only the planned tenth is ranked (a sort, which spills).
PLAN_PARTS = 4
# (with each URL's host, as recrawl_priorities writes it)
PLAN_TABLE_SQL = "CREATE OR REPLACE TABLE marked (url VARCHAR, host VARCHAR, planned BOOLEAN, gain UBIGINT)"
PLAN_PART_SQL = """
INSERT INTO marked
SELECT url, host, hash(url) % 10 = 0, hash(url || '#')
FROM (SELECT url, host FROM read_parquet('{seeds}') WHERE hash(url) % {parts} = {part}
      UNION SELECT target, target_host FROM read_parquet('{links}') WHERE hash(target) % {parts} = {part})
"""
PLAN_SQL = """
COPY (
    SELECT url, host, 'refresh' AS kind, true AS planned, plan_rank,
           (1 + (plan_rank - 1) * 5 // (SELECT count(*) FROM marked WHERE planned))::INTEGER AS level
    FROM (SELECT url, host, row_number() OVER (ORDER BY gain) AS plan_rank FROM marked WHERE planned)
    UNION ALL
    SELECT url, host, 'refresh', false, NULL, 5 FROM marked WHERE NOT planned
) TO '{plan}' (FORMAT parquet);
DROP TABLE marked;
"""
# DuckDB's memory while generating: it spills beyond (at 100 million links, the plan's distinct
# URLs and their ranking); the machine is shared, and the step measured runs alone afterwards.
GENERATE_MEMORY_LIMIT = "6GB"


def generate(root: Path, urls: int, hosts: int) -> None:
    import duckdb

    from crawl_assets.storage.layout import fetch_log_file, links_file, seeds_file

    seeds = seeds_file(root)
    seeds.parent.mkdir(parents=True)
    con = duckdb.connect()
    con.execute(f"SET memory_limit = '{GENERATE_MEMORY_LIMIT}'")
    con.execute(f"SET temp_directory = '{root / '.spill'}'")
    con.execute("SET preserve_insertion_order = false")
    con.execute(SEEDS_SQL.format(seeds=seeds, hosts=int(hosts)))
    for shard in range(SHARD_FILES):
        links = LINKS_SQL.format(shard=shard, shard_files=SHARD_FILES, urls=int(urls), hosts=int(hosts))
        for day_no, day in enumerate(("2026-11-27", "2026-11-28")):
            path = links_file(root, day, f"s{shard:02d}")
            path.parent.mkdir(parents=True)
            # (link i is on day i % 2: a shard's rows are all on one day, the other day's file is empty)
            con.execute(f"COPY (SELECT * FROM ({links}) WHERE {shard % 2} = {day_no}) TO '{path}' (FORMAT parquet)")
        log = fetch_log_file(root, "2026-11-28", f"s{shard:02d}")
        log.parent.mkdir(parents=True, exist_ok=True)
        con.execute(f"""COPY (SELECT target AS url, target_host AS host, depth, 200 AS status,
            'ok' AS status_class, TIMESTAMPTZ '2026-11-28 10:00:00+00' AS fetched_at,
            '"' || md5(target) || '"' AS etag, NULL::VARCHAR AS last_modified,
            'sha1:' || md5(target) AS payload_digest, NULL::VARCHAR AS redirect_to, NULL::BOOLEAN AS hsts
            FROM ({links}) WHERE hash(target) % 5 = 0)
            TO '{log}' (FORMAT parquet)""")
    con.close()
    shutil.rmtree(root / ".spill", ignore_errors=True)
    write_plan(root)
    plan_per_shard(root)


def plan_per_shard(root: Path) -> None:
    """The plan as a crawl of this size makes it (settings.priorities_per_shard): one file a
    shard, each its own hosts' URLs, and the crawl price's file naming the shards
    (recrawl_plan.priorities_files); the one file removed. A per-shard frontier reads its own
    shard's file only; the one-go frontier reads them all."""
    import duckdb

    from crawl_assets.crawler.settings import CrawlSettings
    from crawl_assets.pipeline.frontier_shard_inputs import split_files
    from crawl_assets.storage.layout import crawl_price_file, priorities_file, shard_priorities_file

    day, whole, shards = "2026-11-28", priorities_file(root, "2026-11-28"), CrawlSettings().shard_keys()
    folder = root / ".plan-split"
    con = duckdb.connect(config={"memory_limit": GENERATE_MEMORY_LIMIT, "preserve_insertion_order": False,
                                 "temp_directory": str(root / ".spill")})
    try:
        files = split_files(con, CrawlSettings(), [whole], "host", folder)
    finally:
        con.close()
    for shard in shards:
        assert len(files[shard]) == 1, files[shard]
        target = shard_priorities_file(root, day, shard)
        target.parent.mkdir(parents=True, exist_ok=True)
        files[shard][0].rename(target)
    crawl_price_file(root, day).parent.mkdir(parents=True, exist_ok=True)
    crawl_price_file(root, day).write_text(json.dumps({"shards": shards}))
    whole.unlink()
    shutil.rmtree(folder)
    shutil.rmtree(root / ".spill", ignore_errors=True)


def write_plan(root: Path) -> None:
    """The recrawl plan, built in a database file beside the data (removed after): the known
    URLs' table stays on disk, not in memory."""
    import duckdb

    from crawl_assets.storage.layout import priorities_file, seeds_file

    plan = priorities_file(root, "2026-11-28")
    plan.parent.mkdir(parents=True, exist_ok=True)
    database = root / ".plan.duckdb"
    con = duckdb.connect(str(database))
    try:
        con.execute(f"SET memory_limit = '{GENERATE_MEMORY_LIMIT}'")
        con.execute(f"SET temp_directory = '{root / '.spill'}'")
        con.execute("SET preserve_insertion_order = false")
        con.execute(PLAN_TABLE_SQL)
        links = root / "links" / "date=*" / "shard=*" / "*.parquet"
        for part in range(PLAN_PARTS):
            con.execute(PLAN_PART_SQL.format(seeds=seeds_file(root), links=links, parts=PLAN_PARTS, part=part))
        con.execute(PLAN_SQL.format(plan=plan))
    finally:
        con.close()
        database.unlink(missing_ok=True)
        shutil.rmtree(root / ".spill", ignore_errors=True)


def bytes_written() -> int:
    """Bytes this process caused to be written to storage (shard files and DuckDB's spills)."""
    with open("/proc/self/io") as io:
        return next(int(line.split()[1]) for line in io if line.startswith("write_bytes:"))


def shard_steps(settings, history, plan, split: bool):
    """The day per shard as its Dagster steps build it, one after the other: the day's start
    (frontier_snapshot[D]: the inputs split by shard, frontier_shard_inputs.start_day_split; or,
    without split, the start as it was before: the cut only, each shard reading the crawl's
    inputs), then each shard's frontier (shard_frontier[D|S]) from the inputs the start names.
    Yields the seconds of the start, then each shard's result."""
    from crawl_assets.pipeline.frontier_shard_inputs import shard_day_inputs, start_day_split
    from crawl_assets.pipeline.frontier_step import cut_json, cut_of_json, first_day_cut_of_shards, shard_frontier
    from crawl_assets.storage.layout import day_start_file, write_bytes_atomic

    started, root, shards = time.perf_counter(), settings.data_root, settings.shard_keys()
    if split:
        start_day_split(settings, history, plan, DAY)
    else:
        write_bytes_atomic(cut_json(None if plan else first_day_cut_of_shards(settings, history, shards)),
                           day_start_file(root, DAY))
    yield time.perf_counter() - started
    for shard in shards:
        own, own_plan, _ = shard_day_inputs(root, DAY, shard)
        yield shard_frontier(settings, own, own_plan, shard, cut_of_json(day_start_file(root, DAY).read_bytes()))


def measure(root: Path, per_shard: bool, memory_mb: int | None, steps: str | None = None) -> dict:
    """Run in a fresh process: build the frontier and write its shard files; per_shard: the
    links, fetch logs and plan split once by shard (frontier_shard_inputs), then one shard at
    a time (frontier_step.frontiers_of_shards) from its own rows, each shard's DuckDB work
    done and its memory returned before the next begins, as a crawl too large for one
    grouping runs it."""
    from collections import Counter

    from crawl_assets.crawler.settings import CrawlSettings
    from crawl_assets.storage.layout import frontier_file, write_parquet_atomic
    from crawl_assets.pipeline.crawl_history import history_before
    from crawl_assets.pipeline.frontier_step import build_frontier, frontiers_of_shards
    from crawl_assets.pipeline.frontier_shard_inputs import split_by_shard
    from crawl_assets.pipeline.priorities.recrawl_plan import plan_path

    from bench.measures import peak_rss_kb

    settings = dataclasses.replace(CrawlSettings(), data_root=root, blocklist_file=root / "none.txt")
    if memory_mb:
        settings = dataclasses.replace(settings, frontier_memory_mb=memory_mb)
    started, cpu = time.perf_counter(), time.process_time()
    history, plan = history_before(root, DAY), plan_path(root, DAY)
    kept, hosts, left_out, split_seconds = 0, 0, Counter(), 0.0
    if steps:
        results = shard_steps(settings, history, plan, steps == "split")
        split_seconds = next(results)
    elif per_shard:
        split = split_by_shard(settings, history, plan, root / "by_shard")
        split_seconds = time.perf_counter() - started
    for shard in settings.shard_keys() if per_shard or steps else [None]:
        result = next(results) if steps else frontiers_of_shards(settings, split.histories, split.plans, [shard])[0] \
            if per_shard else build_frontier(settings, history, plan)
        for key, rows in result.shard_tables():
            write_parquet_atomic(rows, frontier_file(root, DAY, key))
        kept, hosts = kept + result.counts.urls, hosts + result.counts.hosts  # (a host is in one shard)
        left_out.update(result.counts.left_out_by_reason)
        del result
    seconds = time.perf_counter() - started
    return {"seconds": seconds, "cpu_seconds": time.process_time() - cpu, "frontier": kept, "hosts": hosts,
            "split_seconds": split_seconds,
            "left_out": dict(sorted(left_out.items())),
            "peak_rss_mb": peak_rss_kb() / 1024, "written_mb": bytes_written() / 2**20}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--urls", type=int, default=10_000_000, help="link rows generated (known URLs)")
    parser.add_argument("--hosts", type=int, default=100_000)
    parser.add_argument("--root", type=Path, help="generate here, or reuse what was generated here")
    parser.add_argument("--per-shard", action="store_true",
                        help="split the links, fetch logs and plan by shard once, then build the frontier one "
                             "shard at a time from its own rows (how 100M known URLs fit; default: in one go)")
    parser.add_argument("--frontier-memory-mb", type=int,
                        help="DuckDB's memory for the frontier (settings.frontier_memory_mb; default: the setting's)")
    parser.add_argument("--shard-steps", choices=["split", "whole"],
                        help="the day per shard as its Dagster steps run it: the day's start, then each shard's "
                             "frontier from its part of the start's split (split) or from the crawl's inputs (whole: "
                             "the steps before the split was wired in)")
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)  # the child process
    args = parser.parse_args()
    load_at_start = os.getloadavg()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from bench.measures import load_line, stall_line, stall_totals
    if args.measure:
        print(json.dumps(measure(args.measure, args.per_shard, args.frontier_memory_mb, args.shard_steps)))
        return 0
    with tempfile.TemporaryDirectory(prefix="bench-frontier-") as tmp:
        root = args.root or Path(tmp)
        sizes = root / "bench-sizes.json"
        if args.root and root.exists() and any(root.iterdir()) and not sizes.exists():
            print(f"{root} holds other files: give --root a new or empty folder", file=sys.stderr)
            return 2
        if not sizes.exists() or json.loads(sizes.read_text()) != [args.urls, args.hosts]:
            started = time.perf_counter()
            if sizes.exists():  # generated here by this benchmark for other sizes
                shutil.rmtree(root)
            root.mkdir(parents=True, exist_ok=True)
            generate(root, args.urls, args.hosts)
            sizes.write_text(json.dumps([args.urls, args.hosts]))
            print(f"generated {args.urls:,} link rows on {args.hosts:,} hosts in {time.perf_counter() - started:.1f} s",
                  flush=True)
        stalls, started = stall_totals(), time.perf_counter()
        memory = ["--frontier-memory-mb", str(args.frontier_memory_mb)] if args.frontier_memory_mb else []
        steps = ["--shard-steps", args.shard_steps] if args.shard_steps else []
        child = subprocess.run([sys.executable, __file__, "--measure", str(root)] + ["--per-shard"] * args.per_shard
                               + memory + steps, capture_output=True, text=True)
        if child.returncode != 0:
            print(f"the measuring process failed:\n{child.stderr}", file=sys.stderr)
            return 1
        figures = json.loads(child.stdout.strip().splitlines()[-1])
        print(stall_line(stalls, time.perf_counter() - started))
    print(f"frontier kept {figures['frontier']:,} URLs on {figures['hosts']:,} hosts; "
          f"left out: {figures['left_out']}; {figures['written_mb']:.0f} MB written (shard files, DuckDB's spills)")
    if args.per_shard or args.shard_steps:
        print(f"the inputs split by shard (or the day's start) in {figures['split_seconds']:.1f} s of the "
              f"{figures['seconds']:.1f} s")
    print(load_line(load_at_start))
    print(f"frontier urls={args.urls} hosts={args.hosts} seconds={figures['seconds']:.1f} "
          f"peak_rss_mb={figures['peak_rss_mb']:.0f} cpu_seconds={figures['cpu_seconds']:.1f}"
          + (" per_shard=1" if args.per_shard else "") + (f" shard_steps={args.shard_steps}" if args.shard_steps else "")
          + (f" frontier_memory_mb={args.frontier_memory_mb}" if args.frontier_memory_mb else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
