"""frontier_snapshot[D]: seeds plus every link discovered before day D, split by host shard.

Days are built in order: the frontier of D depends on the frontier of D-1 (a dependency on its
own earlier partition, which Dagster allows, so a backfill builds one day's frontier after the
other), and waits until the previous crawl day has closed (pipeline/day_order.py says why that
part cannot be a declared dependency).

A re-run for a day whose fetch began changes nothing: the day keeps the frontier its batches
fetched, and the materialisation says so (KEPT_METADATA, which the day-chain sensor reads: no
fetch follows it). A run tagged REFETCH_TAG builds it again, for a refetch of the whole day.
A day before the crawl's newest day is refused (pipeline/day_order.py says why).

With settings.day_per_shard the day's start does only the crawl-wide part (the checks above,
the seeds, links, fetch logs and plan split by shard once, and without a plan the first day's
cut), and shard_frontier[D|S] builds each shard's frontier from its own part of that split in
the shard's fetch run (fetch_job), before its batch: the same rows
(frontier_step.frontiers_of_shards; pipeline/frontier_shard_inputs.py)."""

from dagster import (
    AssetDep,
    AssetExecutionContext,
    AssetKey,
    MaterializeResult,
    MetadataValue,
    asset,
)

from ...pipeline.crawl_history import history_before
from ...pipeline.day_order import check_in_order, check_seeds_for, fetch_begun, urls_new_since, wait_for_previous_day
from ...crawler.crawl_errors import CrawlInputError
from ...pipeline.frontier_shard_inputs import shard_day_inputs, start_day_split
from ...pipeline.frontier_step import FrontierResult, build_frontier, cut_of_json, shard_frontier as build_shard_frontier
from ...pipeline.priorities.recrawl_plan import plan_location, plan_path
from ...storage.layout import day_start_file, frontier_file, write_parquet_atomic
from ...storage.shared_root import parquet_file
from ..partitions import PREVIOUS_DAY, SAME_DAY, daily_partitions, fetch_partitions, split_fetch_key
from ..resources import CrawlSettingsResource
from .failures import fails_with_crawl_errors
from .fetch import REFETCH_TAG

# True on the materialisation of a re-run that kept the day's frontier (nothing was built).
KEPT_METADATA = "kept_fetched_frontier"


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
    if (fetched := fetch_begun(root, date)) and context.run.tags.get(REFETCH_TAG) != "true":
        return kept_frontier(context, date, fetched)
    check_in_order(root, date)
    previous = wait_for_previous_day(root, date, settings.previous_day_wait_s, log=context.log.info)
    history = history_before(root, date)
    check_seeds_for(settings, date, parquet_file(history.seeds).metadata.num_rows)
    if settings.day_per_shard:  # each shard's frontier is built in its fetch run (shard_frontier)
        return day_started(settings, history, date)
    # The plan recrawl_priorities made for today when yesterday closed (none on the first day).
    frontier = build_frontier(settings, history, plan_path(root, date))
    for shard, rows in frontier.shard_tables():
        write_parquet_atomic(rows, frontier_file(root, date, shard))
    return MaterializeResult(metadata=frontier_metadata(frontier, root, date, previous.day))


def frontier_metadata(frontier: FrontierResult, root, date: str, previous_day: str | None) -> dict:
    counts = frontier.counts
    return {
        "urls": counts.urls,
        "hosts": counts.hosts,
        "urls_per_shard": MetadataValue.json(dict(counts.urls_per_shard)),
        "recrawl_plan": MetadataValue.path(plan_location(plan_path(root, date))),
        "urls_new_since_previous_day": urls_new_since(root, previous_day, frontier.table),
        "previous_day": previous_day or "none (the crawl's first day)",
        "urls_left_out": counts.left_out,
        "urls_left_out_by_reason": MetadataValue.json(dict(counts.left_out_by_reason)),
        "path": MetadataValue.path(str(frontier_file(root, date, "*").parent.parent)),
    }


def day_started(settings, history, date: str) -> MaterializeResult:
    """A day per shard (settings.day_per_shard): only the crawl-wide part, the inputs split by
    shard once and the first day's cut (no plan), written for the shards' frontiers
    (shard_frontier) to read."""
    root = settings.data_root
    plan = plan_path(root, date)
    start = start_day_split(settings, history, plan, date)
    return MaterializeResult(metadata={
        "built": "shard by shard, each shard's frontier in its fetch run (shard_frontier)",
        "recrawl_plan": MetadataValue.path(plan_location(plan)),
        "first_day_cut": "none" if start["first_day_cut"] is None else str(tuple(start["first_day_cut"])),
        "inputs_by_shard": MetadataValue.path(str(root / start["split"]["folder"])),
        "path": MetadataValue.path(str(day_start_file(root, date))),
    })


@asset(group_name="frontier", partitions_def=fetch_partitions,
       deps=[AssetDep(AssetKey("frontier_snapshot"), partition_mapping=SAME_DAY)])
@fails_with_crawl_errors
def shard_frontier(context: AssetExecutionContext, crawl_settings: CrawlSettingsResource) -> MaterializeResult:
    """One shard's frontier of the day (settings.day_per_shard), built from its own hosts' URLs in
    its fetch run, before its batch: frontier_snapshot's rows of the shard, read from the shard's
    part of the day's split inputs only. Kept, as the day's whole frontier is, when the shard's
    fetch began from it since the day started."""
    settings = crawl_settings.load()
    (date, shard), root = split_fetch_key(context.partition_key), settings.data_root
    start, path = day_start_file(root, date), frontier_file(root, date, shard)
    if not start.exists():
        raise CrawlInputError(f"{start} is missing: materialise frontier_snapshot for {date} first (it starts the day)")
    if shard in fetch_begun(root, date) and path.exists() and path.stat().st_mtime >= start.stat().st_mtime:
        return kept_frontier(context, date, [shard])
    history, plan, split = shard_day_inputs(root, date, shard)  # its own part of the day's split
    frontier = build_shard_frontier(settings, history, plan, shard, cut_of_json(start.read_bytes()))
    ((_, rows),) = frontier.shard_tables()
    write_parquet_atomic(rows, path)
    counts = frontier.counts
    return MaterializeResult(metadata={
        "urls": counts.urls,
        "hosts": counts.hosts,
        "recrawl_plan": MetadataValue.path(plan_location(plan)),
        "urls_left_out": counts.left_out,
        "urls_left_out_by_reason": MetadataValue.json(dict(counts.left_out_by_reason)),
        "inputs": "the crawl's (a day started before its split)" if split is None else f"{split}/*/shard={shard}",
        "path": MetadataValue.path(str(path)),
    })


def kept_frontier(context: AssetExecutionContext, date: str, fetched: list[str]) -> MaterializeResult:
    """The re-run of a fetched day: its frontier stays as its batches fetched it."""
    sentence = (f"the frontier of {date} is kept as it was: the fetch of shard(s) {', '.join(fetched)} began "
                f"from it, and building it again would leave them fetched against another frontier; to crawl "
                f"{date} again from a new frontier, refetch the whole day (python -m crawl_assets.cli.cycle "
                f"--date {date} --refetch, or this job with the tag {REFETCH_TAG}=true)")
    context.log.info(sentence)
    return MaterializeResult(metadata={KEPT_METADATA: True, "kept_because": sentence})
