"""Jobs: one per partitioning, since a Dagster run covers one partition of one partitioning.

A day's cycle is three stages of runs (`cli/cycle.py` submits them in order): frontier_job[D],
fetch_job[D|shard] for every shard, day_close_job[D]. With settings.day_per_shard each fetch
run builds its shard's frontier first (shard_frontier), and three stages more close the day
per shard (SHARD_CLOSE_STAGES): shard_close_job[D|shard] for every shard (its seen filter and
its priorities' summary), crawl_price_job[D], shard_priorities_job[D|shard] for every shard."""

from __future__ import annotations

from dagster import AssetSelection, define_asset_job

from .assets.fetch import FETCH_ASSETS
from .assets.priorities_per_shard import PER_SHARD_PRIORITIES
from .partitions import DAY_PER_SHARD, daily_partitions, fetch_partitions
from .run_status import SHARD_CLOSE_JOB, SHARD_PRIORITIES_JOB

# Dagster tags every run of a fetch partition with its shard under this key, whatever started
# it (a job, the asset graph, a backfill, automation, a sensor): dagster.yaml allows one run per
# value, so two days never crawl one shard's hosts at the same time.
SHARD_TAG = "dagster/partition/shard"
# Runs submitted by a driver (`make crawl`, `make demo`) carry this tag: the sensors that chain a
# day's stages leave those runs alone, since the driver submits each next stage itself.
DRIVER_TAG = "crawl/driver"
CLI_DRIVER = "cli"  # its value on the runs of the cycle commands (cli/cycle.py)


seeds_job = define_asset_job("seeds_job", selection=AssetSelection.assets("seeds"))

# The three stages of a day. It starts by reading the seed files again and building the
# frontier; it closes with everything that reads the fetch batches (registry, seen filter,
# dedup, change statistics, report, catalog, ...).
FRONTIER_STAGE = AssetSelection.assets("seeds", "frontier_snapshot")
# A shard's fetch run: fetch_log, warc_archive, links, dropped_urls, change_evidence, and for
# a day per shard the shard's frontier first (shard_frontier).
FETCH_STAGE = AssetSelection.assets(*FETCH_ASSETS, *(["shard_frontier"] if DAY_PER_SHARD else []))
# The close's daily assets (for a day per shard, its stages per shard follow it: SHARD_CLOSE_STAGES).
PER_SHARD_CLOSE = ("shard_seen_filter", *PER_SHARD_PRIORITIES)
CLOSE_STAGE = AssetSelection.assets(*FETCH_ASSETS).downstream(include_self=False) - \
    AssetSelection.assets(*(PER_SHARD_CLOSE if DAY_PER_SHARD else []))

# The UI shows this on the job's page: the clicks that run today's cycle (README, "Run today's
# cycle"; tests/ui/test_dagster_ui.py clicks them). "Latest" is today: the partitions end today.
frontier_job = define_asset_job(
    "frontier_job", selection=FRONTIER_STAGE, partitions_def=daily_partitions,
    description="Starts a crawl day. To run today's cycle: Materialize all… → Latest (today's partition) "
                "→ Launch 1 run. The sensors then fetch every shard and close the day.")
fetch_job = define_asset_job("fetch_job", selection=FETCH_STAGE, partitions_def=fetch_partitions)
day_close_job = define_asset_job("day_close_job", selection=CLOSE_STAGE, partitions_def=daily_partitions)
# A day per shard's close, after day_close_job: three stages, each shard's runs keyed like its fetch batch.
shard_close_job = define_asset_job(SHARD_CLOSE_JOB, selection=AssetSelection.assets("shard_seen_filter", "priority_part"),
                                   partitions_def=fetch_partitions)
crawl_price_job = define_asset_job("crawl_price_job", selection=AssetSelection.assets("crawl_price"),
                                   partitions_def=daily_partitions)
shard_priorities_job = define_asset_job(SHARD_PRIORITIES_JOB, selection=AssetSelection.assets("shard_priorities"),
                                        partitions_def=fetch_partitions)
# (job, per shard): the stages after day_close_job for a day per shard
SHARD_CLOSE_STAGES = ((shard_close_job, True), (crawl_price_job, False), (shard_priorities_job, True))

seen_job = define_asset_job(
    "seen_job", selection=AssetSelection.assets("url_registry", "seen_url_filter"),
    partitions_def=daily_partitions)

# The seen-URL filter alone, rebuilt from the day's URL registry: the repair of a lost filter
# (cli/cycle.py runs it before a day whose previous day's filter is missing or damaged).
seen_filter_job = define_asset_job(
    "seen_filter_job", selection=AssetSelection.assets("seen_url_filter"), partitions_def=daily_partitions)

dedup_job = define_asset_job(
    "dedup_job", selection=AssetSelection.assets("simhash_index", "near_duplicate_clusters"),
    partitions_def=daily_partitions)

catalog_job = define_asset_job("catalog_job", selection=AssetSelection.assets("crawl_catalog"),
                                partitions_def=daily_partitions)

ALL_JOBS = [seeds_job, frontier_job, fetch_job, day_close_job, seen_job, seen_filter_job, dedup_job, catalog_job,
            *([shard_close_job, crawl_price_job, shard_priorities_job] if DAY_PER_SHARD else [])]
