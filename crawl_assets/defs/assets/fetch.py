"""The fetch of one day's host shard, fetch_job[D|shard] (this step, fetch_batch): one run, five assets on the same
partitions, so the lineage graph shows the archives and what is built from them:

- fetch_log: one row per request (status, timings, validators, where its WARC record is); with
  a render tier, the step also writes render_decisions beside it (each host's decision and evidence);
- warc_archive: the WARC files of the batch, each with its CDXJ and Parquet capture index;
- links: every link found, with the trap defences' verdict;
- dropped_urls: the URLs the trap defences refused, counted by reason and host;
- change_evidence: the dated entries of the sitemaps and feeds fetched (a page's <lastmod>,
  an RSS/Atom entry's date), which change_stats reads as evidence of a change.

Inputs: the day's frontier (declared), the WARC files' capture indexes of earlier days
(declared as a dependency of warc_archive on yesterday's, all shards: the payloads archived
before, pages and the render tier's subresources, so copies become revisit records), and
yesterday's seen-URL filter and host near-duplicate ratios. Those two are read from disk without a declared dependency: they are built from the
fetch logs, and Dagster refuses a dependency cycle between two assets even across days
(dagster-io/dagster#13368). frontier_snapshot[D] waits for the previous day to close
(pipeline/day_order.py), and the fetch runs after it, so the order holds all the same.
"""

import warnings
from collections import Counter

from dagster import (
    AllPartitionMapping,
    AssetDep,
    AssetExecutionContext,
    AssetKey,
    AssetSpec,
    DimensionPartitionMapping,
    MaterializeResult,
    MetadataValue,
    MultiPartitionMapping,
    TimeWindowPartitionMapping,
    multi_asset,
)

from ...pipeline.day_order import check_in_order
from ...pipeline.fetch_step import (
    REFETCH_TAG, FetchResult, fetch_inputs, nothing_fetched, run_fetch_step, seen_filter_path,
)
from ...pipeline.archive.warc_upload import local_warc_dir, publish_warc_dir
from ...storage.layout import (
    change_evidence_file, dropped_file, fetch_log_file, links_file, render_decisions_file, warc_dir,
    write_parquet_atomic,
)
from ..checks import FETCH_CHECKS, fetch_check_results
from ..metadata_tables import dropped_metadata, fetch_log_metadata, table_metadata
from ..partitions import DAY_PER_SHARD, SAME_DAY, fetch_partitions, split_fetch_key
from ..resources import CrawlSettingsResource
from ..run_policies import fetch_retry_policy
from .failures import fails_with_crawl_errors, terminations_not_retried

FETCH_LOG, WARC_ARCHIVE, LINKS, DROPPED_URLS = "fetch_log", "warc_archive", "links", "dropped_urls"
CHANGE_EVIDENCE = "change_evidence"
FETCH_ASSETS = (FETCH_LOG, WARC_ARCHIVE, LINKS, DROPPED_URLS, CHANGE_EVIDENCE)

with warnings.catch_warnings():  # these mappings are marked beta; they are the documented way
    warnings.simplefilter("ignore")
    # warc_archive[D|s] reads the capture indexes of day D-1, all shards (none before the first day)
    PREVIOUS_DAY_ALL_SHARDS = MultiPartitionMapping({
        "date": DimensionPartitionMapping("date", TimeWindowPartitionMapping(
            start_offset=-1, end_offset=-1, allow_nonexistent_upstream_partitions=True)),
        "shard": DimensionPartitionMapping("shard", AllPartitionMapping()),
    })

FRONTIER_OF_THE_DAY = AssetDep(AssetKey("frontier_snapshot"), partition_mapping=SAME_DAY)
# ... and, for a day per shard, the shard's own, built in the same run before the batch
FRONTIERS = [FRONTIER_OF_THE_DAY, *([AssetDep(AssetKey("shard_frontier"))] if DAY_PER_SHARD else [])]


def _spec(key: str, description: str, *deps: AssetDep) -> AssetSpec:
    return AssetSpec(key, group_name="fetch", description=description, deps=[*FRONTIERS, *deps])


@multi_asset(
    name="fetch_batch",
    specs=[
        _spec(FETCH_LOG, "One row per request of the shard's batch: status class, timings, validators, "
                         "the WARC record it wrote."),
        _spec(WARC_ARCHIVE, "The batch's WARC files (gzip per record), each with a CDXJ and a Parquet "
                            "capture index beside it.",
              AssetDep(AssetKey(WARC_ARCHIVE), partition_mapping=PREVIOUS_DAY_ALL_SHARDS)),
        _spec(LINKS, "Every link found in the batch's pages, with the trap defences' verdict."),
        _spec(DROPPED_URLS, "URLs the trap defences refused, by reason and host."),
        _spec(CHANGE_EVIDENCE, "Sitemap <lastmod> and RSS/Atom entry dates of the pages the batch's "
                               "sitemaps and feeds list: evidence of a change for change_stats."),
    ],
    partitions_def=fetch_partitions,
    check_specs=FETCH_CHECKS,
    # Tried again twice (fetch_retry_delay_s apart, doubling); a shard that still fails
    # leaves a partial day, closed on what landed (day_report names it).
    retry_policy=fetch_retry_policy(),
)
@fails_with_crawl_errors
@terminations_not_retried  # Ctrl-C or Terminate ends the run: the retry policy is for failures
def fetch_batch(context: AssetExecutionContext, crawl_settings: CrawlSettingsResource):
    """Fetches every frontier URL of one host shard for one day, one request in flight per host."""
    settings = crawl_settings.load()
    date, shard = split_fetch_key(context.partition_key)
    root, folder = settings.data_root, warc_dir(settings.data_root, date, shard)
    refetch = context.run.tags.get(REFETCH_TAG) == "true"
    if refetch:  # fetching a day again beneath later days would change what they were built on
        check_in_order(root, date)
    inputs = fetch_inputs(root, date, shard, settings)
    local = local_warc_dir(settings, folder)  # folder itself, unless the root is a URL
    result = run_fetch_step(settings, shard, inputs, local,
                            warc_prefix=f"recrawl-{date}-{shard}-{context.run_id[:8]}", refetch=refetch)
    publish_warc_dir(local, folder)  # before the fetch log that points at the WARC files
    write_parquet_atomic(result.fetch_log, fetch_log_file(root, date, shard))
    write_parquet_atomic(result.links, links_file(root, date, shard))
    write_parquet_atomic(result.dropped, dropped_file(root, date, shard))
    write_parquet_atomic(result.change_evidence, change_evidence_file(root, date, shard))
    if result.render_decisions is not None:
        write_parquet_atomic(result.render_decisions, render_decisions_file(root, date, shard))
    checks = fetch_check_results(settings, result.fetch_log, inputs.frontier, local)
    metadata = fetch_metadata(result, root, date, shard)
    if result.reused:
        context.log.info(nothing_fetched(result, date, shard))
    return tuple(MaterializeResult(asset_key=key, metadata=metadata[key],
                                   check_results=[c for c in checks if c.asset_key == AssetKey(key)])
                 for key in FETCH_ASSETS)


def render_decision_metadata(result: FetchResult, root, date: str, shard: str) -> dict:
    """The render tier's hosts by decision (render, plain, listed), and where the table is."""
    if result.render_decisions is None:
        return {}
    decisions = Counter(str(d) for d in result.render_decisions.column("decision").to_pylist())
    return {"render_decisions": MetadataValue.json(dict(decisions)),
            "render_decisions_path": MetadataValue.path(str(render_decisions_file(root, date, shard)))}


def fetch_metadata(result: FetchResult, root, date: str, shard: str) -> dict[str, dict]:
    """What each of the five assets shows in the UI for the batch."""
    counts = result.counts
    seen_path = seen_filter_path(root, date)
    said = {"nothing_fetched": nothing_fetched(result, date, shard)} if result.reused else {}
    metadata = {
        FETCH_LOG: {
            # the rows (each frontier URL's outcome, refusals included) and the answers among them
            "fetch_log_rows": counts.fetched, "answered": counts.answered,
            **{name: getattr(counts, name) for name in (
                "frontier_urls", "discovered_in_batch", "hosts", "demoted_hosts", "bytes",
                "noindex_pages", "nofollow_pages", "rendered_pages", "render_errors", "left_unrendered", "browser_requests",
                "subresource_requests", "subresources_from_cache", "subresources_revalidated", "listed_changes_same_day")},
            # the render tier's browser requests the crawler did not make, by reason (robots, ...)
            "refused_browser_requests": MetadataValue.json(dict(counts.refused_browser_requests)),
            **render_decision_metadata(result, root, date, shard),
            **fetch_log_metadata(result.fetch_log),  # status tables, host tables, rows, columns
            "seen_filter": MetadataValue.path(str(seen_path) if seen_path else "none yet"),
            "path": MetadataValue.path(str(fetch_log_file(root, date, shard))),
        },
        WARC_ARCHIVE: {
            "warc_files": MetadataValue.json([str(warc_dir(root, date, shard) / p.name) for p in result.warc_files]),
            "warc_bytes": counts.warc_bytes,
            "revisit_records": counts.revisit_records,
            "superseded_warc_files": len(result.superseded),
            "path": MetadataValue.path(str(warc_dir(root, date, shard))),
        },
        LINKS: {
            "links": counts.links,
            "new_links": counts.new_links,
            "unfollowed_links": MetadataValue.json(dict(counts.unfollowed_links)),  # page_nofollow, nofollow_link
            **table_metadata(result.links),
            "path": MetadataValue.path(str(links_file(root, date, shard))),
        },
        DROPPED_URLS: {
            "urls_dropped": counts.urls_dropped,
            **dropped_metadata(result.dropped),  # by reason, the hosts that lost most
            "path": MetadataValue.path(str(dropped_file(root, date, shard))),
        },
        CHANGE_EVIDENCE: {
            "sitemaps_and_feeds_with_dates": len(set(result.change_evidence.column("source").to_pylist())),
            **table_metadata(result.change_evidence),
            "path": MetadataValue.path(str(change_evidence_file(root, date, shard))),
        },
    }
    return {key: {**said, **values} for key, values in metadata.items()}
