"""Per-shard seen filter benchmark: one shard's Bloom filter of the day's URL registry, as
shard_seen_filter[D|S] builds it (a day per shard: each shard's in a run of its own).

A synthetic registry (one Parquet file, ordered by URL as url_registry writes it) of --urls
URLs on --hosts hosts is generated with DuckDB in a temporary data root; the step then runs
in a fresh process (its peak RSS its own, VmHWM) for shard s00 of --shards:
registry_step.build_shard_seen_filter over the registry's file (DuckDB picks the shard's URLs,
grouped by origin; a Python call per distinct origin). Where registry_step has no
registry_path (the code before issue 39's per-shard read, run with PYTHONPATH at an older
checkout), the step as it was: the whole url column loaded and a Python call per URL.

    python bench/shard_seen_filter.py [--urls 1000000] [--hosts 10000] [--shards 8]

Last line: `shard_seen_filter urls= hosts= shards= shard_urls= seconds= cpu_seconds= peak_rss_mb=`
(seconds and cpu_seconds: the one shard's step, after the imports).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DAY = "2026-11-29"

# URL i on host hash(i) % hosts (skewed: the product of two draws, as bench/frontier.py),
# 60-90 characters, in URL order.
REGISTRY_SQL = """
COPY (
    SELECT 'http://h' || (((hash(i) % {hosts}) * (hash(i + {urls}) % {hosts})) // {hosts}) || '.bench.test/section-'
           || (i % 97) || '/page-' || i || '.html?ref=' || (i % 13) AS url
    FROM range({urls}) t(i) ORDER BY url
) TO '{path}' (FORMAT parquet)
"""


def measure(root: Path, shards: int) -> dict:
    """One shard's filter, as the step builds it (see the module's docstring)."""
    from crawl_assets.crawler.url_policy.sharding import shard_key
    from crawl_assets.pipeline import registry_step

    from bench.measures import peak_rss_kb

    started, cpu = time.perf_counter(), time.process_time()
    if hasattr(registry_step, "registry_path"):
        source = registry_step.registry_path(root, DAY)
    else:  # the step before the per-shard read
        source = registry_step.load_registry_urls(root, DAY)
    bloom = registry_step.build_shard_seen_filter(source, shard_key(0), shards)
    return {"seconds": time.perf_counter() - started, "cpu_seconds": time.process_time() - cpu,
            "shard_urls": round(bloom.approx_items), "peak_rss_mb": peak_rss_kb() / 1024}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--urls", type=int, default=1_000_000)
    parser.add_argument("--hosts", type=int, default=10_000)
    parser.add_argument("--shards", type=int, default=8)
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)  # the child process
    args = parser.parse_args()
    load_at_start = os.getloadavg()
    sys.path.append(str(Path(__file__).resolve().parents[1]))  # (PYTHONPATH first: an older checkout measures the step before)
    if args.measure:
        print(json.dumps(measure(args.measure, args.shards)))
        return 0
    import duckdb

    from bench.measures import load_line
    from crawl_assets.storage.layout import url_registry_file

    with tempfile.TemporaryDirectory(prefix="bench-seen-shard-") as tmp:
        root = Path(tmp)
        path = url_registry_file(root, DAY)
        path.parent.mkdir(parents=True)
        duckdb.connect().execute(REGISTRY_SQL.format(urls=args.urls, hosts=args.hosts, path=path))
        child = subprocess.run([sys.executable, __file__, "--measure", str(root), "--shards", str(args.shards)],
                               capture_output=True, text=True)
        if child.returncode != 0:
            print(f"the measuring process failed:\n{child.stderr}", file=sys.stderr)
            return 1
        figures = json.loads(child.stdout.strip().splitlines()[-1])
    print(load_line(load_at_start))
    print(f"shard_seen_filter urls={args.urls} hosts={args.hosts} shards={args.shards} "
          f"shard_urls={figures['shard_urls']} seconds={figures['seconds']:.2f} "
          f"cpu_seconds={figures['cpu_seconds']:.2f} peak_rss_mb={figures['peak_rss_mb']:.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
