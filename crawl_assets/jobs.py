"""Jobs: one per partitioning, since a Dagster run covers one partition of one partitioning."""

from __future__ import annotations

from dagster import AssetSelection, PartitionedConfig, define_asset_job

from .partitions import daily_partitions, fetch_partitions, split_fetch_key

SHARD_TAG = "crawl/shard"


def _shard_tags(partition_key: str) -> dict[str, str]:
    # dagster.yaml allows one run per value of this tag, so two days never crawl one shard at once.
    return {SHARD_TAG: split_fetch_key(partition_key)[1]}


seeds_job = define_asset_job("seeds_job", selection=AssetSelection.assets("seeds"))

frontier_job = define_asset_job(
    "frontier_job", selection=AssetSelection.assets("frontier_snapshot"), partitions_def=daily_partitions)

fetch_job = define_asset_job(
    "fetch_job",
    selection=AssetSelection.assets("fetch_batch"),
    partitions_def=fetch_partitions,
    config=PartitionedConfig(
        partitions_def=fetch_partitions,
        run_config_for_partition_key_fn=lambda _key: {},
        tags_for_partition_key_fn=_shard_tags,
    ),
)

seen_job = define_asset_job(
    "seen_job", selection=AssetSelection.assets("url_registry", "seen_url_filter"),
    partitions_def=daily_partitions)

dedup_job = define_asset_job(
    "dedup_job", selection=AssetSelection.assets("simhash_index", "near_duplicate_clusters"),
    partitions_def=daily_partitions)

catalog_job = define_asset_job("catalog_job", selection=AssetSelection.assets("crawl_catalog"))

ALL_JOBS = [seeds_job, frontier_job, fetch_job, seen_job, dedup_job, catalog_job]
