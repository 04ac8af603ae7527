"""The recrawl priorities of day D planned shard by shard (settings.day_per_shard), in
three stages of runs keyed like the fetch batches (pipeline/priorities/shard_priorities.py):

- priority_part[D|S]: shard S's pages prepared from its own hosts' inputs, its summary written;
- crawl_price[D]: the crawl's one price and its plan, from the shards' summaries read one at a time;
- shard_priorities[D|S]: shard S's URL priorities and host budgets at that price, as the plan ranks them.

Together they write what recrawl_priorities[D] writes in one step, a file a shard: the frontier
of D + 1 reads either (pipeline/priorities/recrawl_plan.py)."""

import warnings

from dagster import (
    AllPartitionMapping,
    AssetDep,
    AssetExecutionContext,
    AssetKey,
    DimensionPartitionMapping,
    IdentityPartitionMapping,
    MaterializeResult,
    MetadataValue,
    MultiPartitionMapping,
    asset,
)

from ...pipeline.priorities.priorities_step import prepare_part, write_part_urls
from ...pipeline.priorities.recrawl_plan import next_day
from ...pipeline.priorities.shard_priorities import (
    part_tables, plan_json, plan_of_shards, planned_rows, read_plan, shard_priorities as price_shard, write_part,
)
from ...pipeline.recrawl_inputs import host_budgets, priorities_inputs
from ...storage.layout import (
    crawl_planned_file, crawl_price_file, priority_part_dir, shard_priorities_file, shard_priority_hosts_file,
    write_bytes_atomic, write_parquet_atomic,
)
from ...storage.shared_root import read_table
from ..metadata_tables import parquet_metadata
from ..partitions import SAME_DAY, daily_partitions, fetch_partitions, split_fetch_key
from ..resources import CrawlSettingsResource
from .failures import fails_with_crawl_errors

with warnings.catch_warnings():  # these mappings are marked beta; they are the documented way
    warnings.simplefilter("ignore")
    # a shard's step of day D reads every shard's batch of day D (links and in-links cross shards)
    SAME_DAY_ALL_SHARDS = MultiPartitionMapping({
        "date": DimensionPartitionMapping("date", IdentityPartitionMapping()),
        "shard": DimensionPartitionMapping("shard", AllPartitionMapping()),
    })

PER_SHARD_PRIORITIES = ("priority_part", "crawl_price", "shard_priorities")


@asset(group_name="recrawl", partitions_def=fetch_partitions,
       deps=[AssetDep(AssetKey("change_stats"), partition_mapping=SAME_DAY),
             AssetDep(AssetKey("near_duplicate_clusters"), partition_mapping=SAME_DAY),
             AssetDep(AssetKey("links"), partition_mapping=SAME_DAY_ALL_SHARDS),
             AssetDep(AssetKey("dropped_urls"), partition_mapping=SAME_DAY_ALL_SHARDS)])
@fails_with_crawl_errors
def priority_part(context: AssetExecutionContext, crawl_settings: CrawlSettingsResource) -> MaterializeResult:
    """The shard's pages (its hosts' known URLs, their change statistics, in-links and host
    facts) prepared for the crawl's price search, written as the shard's summary."""
    settings = crawl_settings.load()
    (date, shard), root = split_fetch_key(context.partition_key), settings.data_root
    inputs = priorities_inputs(root, date, settings, shard)
    tables = part_tables(prepare_part(inputs.part(), settings), inputs.hosts)
    size = write_part(tables, priority_part_dir(root, date, shard))
    return MaterializeResult(metadata={
        "urls": tables["pages"].num_rows,
        "hosts": tables["host_names"].num_rows,
        "bytes": size,
        "path": MetadataValue.path(str(priority_part_dir(root, date, shard))),
    })


@asset(group_name="recrawl", partitions_def=daily_partitions,
       deps=[AssetDep(AssetKey("priority_part"), partition_mapping=SAME_DAY)])
@fails_with_crawl_errors
def crawl_price(context: AssetExecutionContext, crawl_settings: CrawlSettingsResource) -> MaterializeResult:
    """The crawl's typical change rate, its one price for the refresh allocation and the next
    day's plan, from every shard's summary (read one shard at a time)."""
    settings = crawl_settings.load()
    date, root = context.partition_key, settings.data_root
    plan = plan_of_shards({shard: priority_part_dir(root, date, shard) for shard in settings.shard_keys()},
                          next_day(date), settings)
    write_parquet_atomic(planned_rows(plan), crawl_planned_file(root, date))
    write_bytes_atomic(plan_json(plan), crawl_price_file(root, date))
    counts = plan.counts
    return MaterializeResult(metadata={
        "plan_for": next_day(date),
        "price": counts.price,
        "typical_change_rate": plan.typical_rate,
        "budget": counts.budget,
        "planned": counts.planned,
        "planned_refreshes": counts.refresh_planned,
        "planned_discoveries": counts.discovery_planned,
        "hosts_at_their_cap": counts.capped_hosts,
        "expected_freshness": round(counts.expected_freshness, 4),
        "path": MetadataValue.path(str(crawl_price_file(root, date))),
    })


@asset(group_name="recrawl", partitions_def=fetch_partitions,
       deps=[AssetDep(AssetKey("crawl_price"), partition_mapping=SAME_DAY), AssetKey("priority_part")])
@fails_with_crawl_errors
def shard_priorities(context: AssetExecutionContext, crawl_settings: CrawlSettingsResource) -> MaterializeResult:
    """The shard's URL priorities (recrawl_priorities' columns) and host budgets at the
    crawl's price, its planned URLs ranked as the crawl's plan ranks them."""
    settings = crawl_settings.load()
    (date, shard), root = split_fetch_key(context.partition_key), settings.data_root
    plan = read_plan(crawl_price_file(root, date).read_bytes(), read_table(crawl_planned_file(root, date)), shard)
    result = price_shard(priority_part_dir(root, date, shard), plan, shard, next_day(date), settings)
    write_part_urls(result.urls, shard_priorities_file(root, date, shard))
    write_parquet_atomic(host_budgets(result.host_facts, result.hosts), shard_priority_hosts_file(root, date, shard))
    return MaterializeResult(metadata={
        **parquet_metadata(shard_priorities_file(root, date, shard)),
        "plan_for": next_day(date),
        "planned": result.counts["planned"],
        "planned_refreshes": result.counts["refresh_planned"],
        "due": result.counts["due"],
        "path": MetadataValue.path(str(shard_priorities_file(root, date, shard))),
    })
