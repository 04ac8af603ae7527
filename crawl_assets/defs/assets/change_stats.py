"""change_stats[D]: how often each URL changes, estimated from every fetch up to day D
(Cho and Garcia-Molina's estimators, pooled per host and URL pattern), and per host.

Day D's fetches are folded into change_stats[D-1]'s per-URL state (a dependency on its own
earlier partition, so a backfill builds the days in order); without the day before, the
statistics are rebuilt from every fetch log up to D, with the same result."""

from dagster import AssetDep, AssetExecutionContext, AssetKey, MaterializeResult, MetadataValue, asset

from ...pipeline.change_stats.change_evidence import trusted_change_evidence
from ...pipeline.change_stats.change_stats_step import change_stats as estimate_changes
from ...pipeline.recrawl_inputs import change_stats_sources
from ...storage.layout import host_changes_file, write_parquet_atomic
from ..metadata_tables import RATE_BAND_URLS, arrow_table
from ..partitions import PREVIOUS_DAY, daily_partitions
from ..resources import CrawlSettingsResource
from .failures import fails_with_crawl_errors


@asset(group_name="recrawl", partitions_def=daily_partitions,
       deps=[AssetKey("fetch_log"), AssetKey("change_evidence"),
             AssetDep(AssetKey("change_stats"), partition_mapping=PREVIOUS_DAY)])
@fails_with_crawl_errors
def change_stats(context: AssetExecutionContext, crawl_settings: CrawlSettingsResource) -> MaterializeResult:
    """Per URL: visits, changes between visits (by settings.change_definition: the archived
    payload less its per-request values, or the text beyond the near-duplicate threshold; a
    304 is unchanged), the estimated change rate and how much of it is the URL's own evidence."""
    settings = crawl_settings.load()
    date, root = context.partition_key, settings.data_root
    evidence = trusted_change_evidence(root, date)  # sitemap and feed dates of trusted hosts
    sources = change_stats_sources(root, date)
    stats = estimate_changes([str(p) for p in sources.fetch_logs], date, settings, lastmod_evidence=evidence,
                             previous=sources.previous, state_root=root)
    write_parquet_atomic(stats.hosts, host_changes_file(root, date))
    counts, written = stats.counts, stats.state.deltas[-1] if stats.state.deltas else stats.state.base
    return MaterializeResult(metadata={
        "dagster/row_count": counts.urls,  # URLs: a delta file holds only the day's
        "built_from": "the day before and this day's fetches" if sources.previous else "every fetch so far",
        "state_written": "a delta: the URLs this day changed" if stats.state.deltas else "a base: every URL",
        **_of_the_day(counts),
        # the share of URLs whose rate is still their pool's prior (the plan explores them)
        "urls_on_prior_share": counts.on_prior_share,
        "change_rate_distribution": arrow_table(stats.rate_bands, RATE_BAND_URLS),
        "median_changes_a_day": round(counts.rate_p50, 4),
        "change_definition": settings.change_definition,
        "urls_changed_boilerplate_only": counts.boilerplate_changes,
        "hosts_with_trusted_last_modified": counts.lm_trusted_hosts,
        "sitemap_and_feed_dates_used": 0 if evidence is None else evidence.num_rows,
        "visits": counts.visits,
        "changes": counts.changes,
        "path": MetadataValue.path(str(written)),
    })


def _of_the_day(counts) -> dict:
    """The day's own visits, 304s and what conditional GET saved."""
    return {"not_modified_share_of_the_day": counts.day_not_modified_share,
            "bytes_saved_by_conditional_get_of_the_day": counts.day_bytes_saved,
            "visits_of_the_day": counts.day_visits, "not_modified_of_the_day": counts.day_not_modified}
