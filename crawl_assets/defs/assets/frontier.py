"""frontier_snapshot[D]: seeds plus every link discovered before day D, split by host shard.

Days are built in order: the frontier of D depends on the frontier of D-1 (a dependency on its
own earlier partition, which Dagster allows, so a backfill builds one day's frontier after the
other), and waits until the previous crawl day has closed (pipeline/day_order.py says why that
part cannot be a declared dependency)."""

from dagster import (
    AssetDep,
    AssetExecutionContext,
    AssetKey,
    MaterializeResult,
    MetadataValue,
    asset,
)

from ...pipeline.crawl_history import history_before
from ...pipeline.day_order import check_seeds_for, urls_new_since, wait_for_previous_day
from ...pipeline.frontier_step import build_frontier
from ...pipeline.priorities.recrawl_plan import plan_path
from ...storage.layout import frontier_file, write_parquet_atomic
from ...storage.shared_root import parquet_file
from ..partitions import PREVIOUS_DAY, daily_partitions
from ..resources import CrawlSettingsResource
from .failures import fails_with_crawl_errors


@asset(group_name="frontier", partitions_def=daily_partitions,
       deps=[AssetKey("seeds"), AssetDep(AssetKey("frontier_snapshot"), partition_mapping=PREVIOUS_DAY)])
@fails_with_crawl_errors
def frontier_snapshot(context: AssetExecutionContext, crawl_settings: CrawlSettingsResource) -> MaterializeResult:
    """Seeds and links found on earlier days, normalised, de-duplicated, one file per shard.

    Links and validators come from the links and fetch-log files of earlier days
    (`history_before` lists them): the frontier of day D reads fetch results of days before D.
    """
    settings = crawl_settings.load()
    date, root = context.partition_key, settings.data_root
    previous = wait_for_previous_day(root, date, settings.previous_day_wait_s, log=context.log.info)
    history = history_before(root, date)
    check_seeds_for(settings, date, parquet_file(history.seeds).metadata.num_rows)
    # The plan recrawl_priorities made for today when yesterday closed (none on the first day).
    frontier = build_frontier(settings, history, plan_path(root, date))
    for shard, rows in frontier.shard_tables():
        write_parquet_atomic(rows, frontier_file(root, date, shard))
    counts = frontier.counts
    return MaterializeResult(metadata={
        "urls": counts.urls,
        "hosts": counts.hosts,
        "urls_per_shard": MetadataValue.json(dict(counts.urls_per_shard)),
        "recrawl_plan": MetadataValue.path(str(plan_path(root, date) or "none: every known URL within the budgets")),
        "urls_new_since_previous_day": urls_new_since(root, previous.day, frontier.table),
        "previous_day": previous.day or "none (the crawl's first day)",
        "urls_left_out": counts.left_out,
        "urls_left_out_by_reason": MetadataValue.json(dict(counts.left_out_by_reason)),
        "path": MetadataValue.path(str(frontier_file(root, date, "*").parent.parent)),
    })
