"""fetch_batch[D, shard]: fetch the shard's frontier politely; WARC files, fetch log, links."""

import warnings

from dagster import (
    AssetDep,
    Backoff,
    AssetExecutionContext,
    AssetKey,
    MaterializeResult,
    MetadataValue,
    MultiToSingleDimensionPartitionMapping,
    RetryPolicy,
    asset,
)

from ..checks import FETCH_CHECKS, fetch_check_results
from ..layout import dropped_file, fetch_log_file, links_file, warc_dir, write_parquet_atomic
from ..metadata_tables import counts_table
from ..partitions import fetch_partitions, split_fetch_key
from ..pipeline.fetch_step import fetch_inputs, run_fetch_step, seen_filter_path
from ..resources import CrawlSettingsResource
from .failures import fails_with_crawl_errors

with warnings.catch_warnings():  # the mapping is marked beta; it is the documented way to do this
    warnings.simplefilter("ignore")
    DATE_OF_FETCH_PARTITION = MultiToSingleDimensionPartitionMapping(partition_dimension_name="date")


@asset(
    group_name="fetch",
    partitions_def=fetch_partitions,
    deps=[AssetDep(AssetKey("frontier_snapshot"), partition_mapping=DATE_OF_FETCH_PARTITION)],
    check_specs=FETCH_CHECKS,
    # A failed batch (a crash, the machine's network down) is tried again twice, a minute and
    # then two later; a shard that still fails leaves a partial day, closed on what landed.
    retry_policy=RetryPolicy(max_retries=2, delay=60, backoff=Backoff.EXPONENTIAL),
)
@fails_with_crawl_errors
def fetch_batch(context: AssetExecutionContext, crawl_settings: CrawlSettingsResource) -> MaterializeResult:
    """Fetches every frontier URL of one host shard for one day, one request in flight per host."""
    settings = crawl_settings.load()
    date, shard = split_fetch_key(context.partition_key)
    root = settings.data_root
    inputs = fetch_inputs(root, date, shard, settings)
    result = run_fetch_step(settings, shard, inputs, warc_dir(root, date, shard),
                            warc_prefix=f"recrawl-{date}-{shard}-{context.run_id[:8]}")
    write_parquet_atomic(result.fetch_log, fetch_log_file(root, date, shard))
    write_parquet_atomic(result.links, links_file(root, date, shard))
    write_parquet_atomic(result.dropped, dropped_file(root, date, shard))
    counts = result.counts
    seen_path = seen_filter_path(root, date)
    checks = fetch_check_results(settings, result.fetch_log, inputs.frontier, warc_dir(root, date, shard))
    return MaterializeResult(check_results=checks, metadata={
        **{name: getattr(counts, name) for name in (
            "frontier_urls", "fetched", "discovered_in_batch", "hosts", "links", "new_links",
            "revisit_records", "demoted_hosts", "urls_dropped", "bytes", "warc_bytes")},
        "urls_dropped_by_reason": MetadataValue.json(dict(counts.dropped_by_reason)),
        "status_classes": MetadataValue.json(dict(counts.status_classes)),
        "status_class_table": counts_table(counts.status_classes, "status_class"),
        "dagster/row_count": counts.fetched,
        "http_statuses": MetadataValue.json(dict(counts.http_statuses)),
        "seen_filter": MetadataValue.path(str(seen_path) if seen_path else "none yet"),
        "warc_files": MetadataValue.json([str(p) for p in result.warc_files]),
        "superseded_warc_files": len(result.superseded),
        "fetch_log": MetadataValue.path(str(fetch_log_file(root, date, shard))),
    })
