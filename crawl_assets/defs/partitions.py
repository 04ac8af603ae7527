"""Partitions of the crawl: one per day, and for fetch batches one per day x host shard."""

from __future__ import annotations

import warnings

from dagster import (
    DailyPartitionsDefinition,
    MultiPartitionKey,
    MultiPartitionsDefinition,
    MultiToSingleDimensionPartitionMapping,
    PartitionsDefinition,
    StaticPartitionsDefinition,
    TimeWindowPartitionMapping,
)

from ..crawler.settings import load_settings

# The first partition is the crawl's own first day (start_date in the settings), so "all
# partitions" in the UI means the days this crawl has lived, not a year of backfill.
# end_offset=1: today's partition exists, so a crawl can run for today.
daily_partitions = DailyPartitionsDefinition(start_date=load_settings().start_date, end_offset=1)

# An asset's dependency on its own partition of the day before (none before the crawl's first
# day): Dagster allows it and a backfill then builds the days in order.
with warnings.catch_warnings():  # the parameter is marked beta; it is the documented way to do this
    warnings.simplefilter("ignore")
    PREVIOUS_DAY = TimeWindowPartitionMapping(start_offset=-1, end_offset=-1,
                                              allow_nonexistent_upstream_partitions=True)

# The shard set is fixed when the definitions load, from shard_count in the settings read
# then (recrawl.toml and RECRAWL_SETTINGS); CrawlSettingsResource refuses a run whose
# settings disagree.
SHARD_KEYS = load_settings().shard_keys()
shard_partitions = StaticPartitionsDefinition(SHARD_KEYS)
# A day per shard (settings.day_per_shard) or in one process: which assets, jobs and sensors
# the definitions hold, fixed when they load like the shard set (CrawlSettingsResource refuses
# a run whose settings disagree).
DAY_PER_SHARD = load_settings().day_per_shard

fetch_partitions = MultiPartitionsDefinition({"date": daily_partitions, "shard": shard_partitions})


with warnings.catch_warnings():  # the mapping is marked beta; it is the documented way
    warnings.simplefilter("ignore")
    # A day's asset and the same day's shards, either way round (fetch_job[D|S] reads the
    # frontier of D; a day per shard's steps of D|S read D's close, and D's price every shard's)
    SAME_DAY = MultiToSingleDimensionPartitionMapping(partition_dimension_name="date")


def fetch_partition_key(date: str, shard: str) -> MultiPartitionKey:
    return MultiPartitionKey({"date": date, "shard": shard})


def split_fetch_key(partition_key: str) -> tuple[str, str]:
    """(date, shard) of a fetch partition key such as "2026-11-29|s03"."""
    dims = fetch_partitions.get_partition_key_from_str(partition_key).keys_by_dimension
    return dims["date"], dims["shard"]


def partition_tags(partitions_def: PartitionsDefinition, partition_key: str) -> dict[str, str]:
    """The tags Dagster gives a run of this partition from the UI or a backfill (the dimension
    tags included, which the one-run-per-shard limit in dagster.yaml is keyed on): the command
    line and the sensors give their runs the same."""
    return dict(partitions_def.get_tags_for_partition_key(partition_key))
