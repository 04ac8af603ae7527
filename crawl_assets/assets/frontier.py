"""frontier_snapshot[D]: seeds plus every link discovered before day D, split by host shard."""

from dagster import AssetExecutionContext, AssetKey, MaterializeResult, MetadataValue, asset

from ..layout import frontier_file, write_parquet_atomic
from ..partitions import daily_partitions
from ..pipeline.crawl_history import history_before
from ..pipeline.frontier_step import build_frontier
from ..resources import CrawlSettingsResource
from .failures import fails_with_crawl_errors


@asset(group_name="frontier", partitions_def=daily_partitions, deps=[AssetKey("seeds")])
@fails_with_crawl_errors
def frontier_snapshot(context: AssetExecutionContext, crawl_settings: CrawlSettingsResource) -> MaterializeResult:
    """Seeds and links found on earlier days, normalised, de-duplicated, one file per shard.

    Links and validators come from the links and fetch-log files of earlier days
    (`history_before` lists them): the frontier of day D reads fetch results of days before D.
    """
    settings = crawl_settings.load()
    date, root = context.partition_key, settings.data_root
    frontier = build_frontier(settings, history_before(root, date))
    for shard, rows in frontier.shard_tables():
        write_parquet_atomic(rows, frontier_file(root, date, shard))
    counts = frontier.counts
    return MaterializeResult(metadata={
        "urls": counts.urls,
        "hosts": counts.hosts,
        "urls_per_shard": MetadataValue.json(dict(counts.urls_per_shard)),
        "urls_left_out": counts.left_out,
        "urls_left_out_by_reason": MetadataValue.json(dict(counts.left_out_by_reason)),
        "path": MetadataValue.path(str(frontier_file(root, date, "*").parent.parent)),
    })
