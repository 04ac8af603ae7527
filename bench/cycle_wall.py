"""Cycle benchmark: one day of the demo web (50 hosts, 8 shards) through the run queue, as
`make demo` runs it, in a temporary data root and DAGSTER_HOME: the cycle's wall time against
its longest shard, and where the rest goes (each run's wait from submission to its first
event: the daemon's dequeue, the run process starting and loading the definitions).

    python bench/cycle_wall.py [--parallel 4]

Last line: `cycle_wall shards= parallel= wall_s= longest_shard_s= shard_runs_s=
mean_run_start_s= load_avg=` (shard_runs_s: every fetch run's own time, added up).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from crawl_assets.crawler.settings import SETTINGS_ENV  # noqa: E402

DEMO_SETTINGS = ROOT / "settings" / "demo.toml"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parallel", type=int, default=4, help="max_parallel_shards")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="cycle_wall-"))
    try:
        home = folder / "dagster_home"
        home.mkdir()
        shutil.copy(ROOT / "dagster.yaml", home / "dagster.yaml")
        overlay = folder / "bench.toml"
        overlay.write_text(f'[crawl]\ndata_root = "{folder / "data"}"\nmax_parallel_shards = {args.parallel}\n')
        os.environ.update({"DAGSTER_HOME": str(home), SETTINGS_ENV: f"{DEMO_SETTINGS}:{overlay}"})
        run(home, folder / "data")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def run(home: Path, data_root: Path) -> None:
    # Imported once the environment names this run's settings (the partitions read them).
    from crawl_assets.cli.cycle import run_days, today
    from crawl_assets.cli.demo import demo_web
    from demoweb.ordinary.change_model import EPOCH
    from crawl_assets.cli.launcher import open_instance

    date = today()
    load_before = os.getloadavg()[0]
    web = demo_web((dt.date.fromisoformat(date) - EPOCH.date()).days, data_root / "access_log.parquet")
    web.start()
    try:
        (report,) = run_days([date], progress=lambda line: print(line, flush=True))
    finally:
        web.stop()
    instance = open_instance(home)
    waits = []
    for outcome in (report.frontier, *report.fetches, report.close):
        record = instance.get_run_record_by_id(outcome.run_id)
        waits.append(record.start_time - record.create_timestamp.timestamp())
    load = (load_before + os.getloadavg()[0]) / 2
    print(f"cycle_wall shards={len(report.fetches)} parallel={max_parallel_shards()} wall_s={report.wall_s:.1f} "
          f"longest_shard_s={max(r.seconds for r in report.fetches):.1f} "
          f"shard_runs_s={sum(r.seconds for r in report.fetches):.1f} "
          f"mean_run_start_s={statistics.mean(waits):.1f} load_avg={load:.1f}")


def max_parallel_shards() -> int:
    from crawl_assets.crawler.settings import load_settings

    return load_settings().max_parallel_shards


if __name__ == "__main__":
    main()
