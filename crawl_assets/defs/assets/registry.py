"""url_registry[D]: every URL ever discovered up to day D (the authoritative record), and
seen_url_filter[D]: a Bloom filter rebuilt from it, loaded by the next day's fetch batches (each
shard's own, of its hosts' URLs; for a day per shard, each built in a step of its own:
shard_seen_filter[D|S])."""

from dagster import AssetDep, AssetExecutionContext, AssetKey, MaterializeResult, MetadataValue, asset

from ...pipeline.crawl_history import history_through
from ...pipeline.registry_step import (
    build_registry,
    build_seen_filter,
    build_shard_seen_filter,
    build_shard_seen_filters,
    describe_seen_filter,
    load_registry_urls,
    registry_path,
)
from ...pipeline.seen_filter_files import (
    read_seen_filter, shard_seen_filter_file, write_seen_filter, write_shard_seen_filters,
)
from ...storage.layout import seen_filter_file, url_registry_file, write_parquet_atomic
from ..checks import SEEN_FILTER_CHECKS, seen_filter_check_results
from ..metadata_tables import table_metadata
from ..partitions import SAME_DAY, daily_partitions, fetch_partitions, split_fetch_key
from ..resources import CrawlSettingsResource
from .failures import fails_with_crawl_errors


@asset(group_name="seen", partitions_def=daily_partitions,
       deps=[AssetKey("seeds"), AssetKey("fetch_log"), AssetKey("links")])
@fails_with_crawl_errors
def url_registry(context: AssetExecutionContext, crawl_settings: CrawlSettingsResource) -> MaterializeResult:
    """Every URL discovered up to the day: first seen, depth, discovered from, last fetched."""
    root = crawl_settings.load().data_root
    date = context.partition_key
    registry = build_registry(date, history_through(root, date))
    path = url_registry_file(root, date)
    write_parquet_atomic(registry.table, path)
    return MaterializeResult(metadata={
        "urls": registry.counts.urls,
        "never_fetched": registry.counts.never_fetched,
        **table_metadata(registry.table),
        "path": MetadataValue.path(str(path)),
    })


@asset(group_name="seen", partitions_def=daily_partitions, deps=[AssetKey("url_registry")],
       check_specs=SEEN_FILTER_CHECKS)
@fails_with_crawl_errors
def seen_url_filter(context: AssetExecutionContext, crawl_settings: CrawlSettingsResource) -> MaterializeResult:
    """A Bloom filter (default 0.1% false positives) of every URL in the day's registry, and
    one of each shard's hosts' URLs."""
    settings = crawl_settings.load()
    root, date = settings.data_root, context.partition_key
    urls = load_registry_urls(root, date)
    path = seen_filter_file(root, date)
    size = write_seen_filter(build_seen_filter(urls), path)
    counts = describe_seen_filter(read_seen_filter(path), urls.num_rows)  # what the fetch batches will load
    checks = seen_filter_check_results(counts.measured_fp_rate, counts.target_fp_rate)
    # and one per shard, which the fetch batch of a shard loads instead (1/shard_count of it);
    # for a day per shard, each shard's step builds its own (shard_seen_filter)
    shard_bytes = "built per shard (shard_seen_filter)" if settings.day_per_shard else write_shard_seen_filters(
        root, date, build_shard_seen_filters(urls, settings.shard_count), settings.shard_count)
    return MaterializeResult(check_results=checks, metadata={
        "elements": counts.elements,
        "bits": counts.bits,
        "bytes": size,
        "bytes_of_the_shard_filters": shard_bytes,
        "target_fp_rate": counts.target_fp_rate,
        "measured_fp_rate": counts.measured_fp_rate,
        "path": MetadataValue.path(str(path)),
    })


@asset(group_name="seen", partitions_def=fetch_partitions,
       deps=[AssetDep(AssetKey("url_registry"), partition_mapping=SAME_DAY)])
@fails_with_crawl_errors
def shard_seen_filter(context: AssetExecutionContext, crawl_settings: CrawlSettingsResource) -> MaterializeResult:
    """A day per shard: the Bloom filter of the day's registry's URLs of the shard's hosts, which
    the shard's next fetch batch loads (seen_url_filter's of that shard, built in a step of its own)."""
    settings = crawl_settings.load()
    (date, shard), root = split_fetch_key(context.partition_key), settings.data_root
    path = shard_seen_filter_file(root, date, shard, settings.shard_count)
    # (from the registry's file: DuckDB picks the shard's URLs, the others never become Python strings)
    size = write_seen_filter(build_shard_seen_filter(registry_path(root, date), shard, settings.shard_count), path)
    return MaterializeResult(metadata={"bytes": size, "shard_count": settings.shard_count,
                                       "path": MetadataValue.path(str(path))})
