"""One recrawl cycle through Dagster, from the command line: seeds, the day's frontier,
every shard's fetch batch, the URL registry and seen filter, the near-duplicate index and
clusters, then the catalog. Each step is
a recorded Dagster run.

    python -m crawl_assets.cycle [--date YYYY-MM-DD]
"""

import argparse
import datetime as dt
import os
import sys
import time
from collections.abc import Callable

from dagster import DagsterInstance, materialize

from .assets import (
    crawl_catalog,
    fetch_batch,
    frontier_snapshot,
    near_duplicate_clusters,
    seeds,
    seen_url_filter,
    simhash_index,
    url_registry,
)
from .jobs import SHARD_TAG
from .partitions import SHARD_KEYS, fetch_partition_key
from .resources import CrawlSettingsResource


class CycleFailed(RuntimeError):
    pass


def run_cycle(date: str, instance: DagsterInstance, crawl_settings: CrawlSettingsResource,
              shards: list[str] | None = None, log_level: str = "INFO",
              progress: Callable[[str], None] = lambda line: None) -> None:
    """Materialise every asset of one cycle for `date`; stops at the first failed run."""
    resources = {"crawl_settings": crawl_settings}
    run_config = {"loggers": {"console": {"config": {"log_level": log_level}}}}

    def step(assets, **kwargs) -> None:
        started = time.monotonic()
        result = materialize(assets, instance=instance, resources=resources, run_config=run_config,
                             raise_on_error=False, **kwargs)
        if not result.success:
            errors = [e.step_failure_data.error.message.strip()
                      for e in result.get_step_failure_events() if e.step_failure_data.error]
            raise CycleFailed(f"run {result.run_id} of {assets[0].key.to_user_string()} "
                              f"{kwargs.get('partition_key', '')} failed: {'; '.join(errors)}")
        for event in result.get_asset_materialization_events():
            materialization = event.materialization
            counts = ", ".join(f"{k}={v.value}" for k, v in materialization.metadata.items()
                               if isinstance(v.value, int) and not isinstance(v.value, bool))
            progress(f"{materialization.asset_key.to_user_string()} "
                     f"{materialization.partition or ''} ({time.monotonic() - started:.1f} s): {counts}")

    step([seeds])
    step([frontier_snapshot], partition_key=date)
    for shard in shards or SHARD_KEYS:
        step([fetch_batch], partition_key=fetch_partition_key(date, shard), tags={SHARD_TAG: shard})
    step([url_registry, seen_url_filter], partition_key=date)
    step([simhash_index, near_duplicate_clusters], partition_key=date)
    step([crawl_catalog])


def today() -> str:
    return dt.datetime.now(dt.timezone.utc).date().isoformat()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--date", default=today(), help="the day's partition (default: today, UTC)")
    args = parser.parse_args(argv)
    dt.date.fromisoformat(args.date)
    instance = DagsterInstance.get() if os.environ.get("DAGSTER_HOME") else DagsterInstance.ephemeral()
    try:
        run_cycle(args.date, instance, CrawlSettingsResource(), log_level="WARNING", progress=lambda line: print(line, flush=True))
    except CycleFailed as exc:
        print(f"cycle failed: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
