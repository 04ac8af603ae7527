"""day_report[D]: the day in a few tables, a summary and pictures, and whether it is partial.

It runs in the day's close (day_close_job) on whatever landed: a shard whose fetch run failed
after its retries (a failed blocking check included), or whose outputs are missing or do not
account for the day's frontier, is missing from the day, and the report names it with why
(`partial`, `missing_shards`: the failed run, or what is wrong with the files)."""

from dagster import AssetExecutionContext, AssetKey, MaterializeResult, MetadataValue, asset

from ...pipeline.report.day_figures import day_figures
from ...pipeline.report.report_charts import change_rate_png, status_mix_png
from ...pipeline.report.report_step import (
    change_rates, day_report as build_day_report, day_report_table, summary_markdown,
)
from ...storage.layout import day_report_dir, write_bytes_atomic, write_parquet_atomic
from ..metadata_tables import arrow_table, counts_table, picture, table_metadata
from ..partitions import daily_partitions
from ..resources import CrawlSettingsResource
from ..run_status import failed_fetch_runs
from .failures import fails_with_crawl_errors
from .fetch import DROPPED_URLS, FETCH_LOG

TOP_HOST_EVENTS = 20


@asset(group_name="report", partitions_def=daily_partitions,
       deps=[AssetKey(FETCH_LOG), AssetKey(DROPPED_URLS), AssetKey("change_stats")])
@fails_with_crawl_errors
def day_report(context: AssetExecutionContext, crawl_settings: CrawlSettingsResource) -> MaterializeResult:
    """The day in one row (its figures, whether it is partial and the shards missing: the
    columns below), its status classes, drop reasons, the hosts spaced widest and answering 429
    most, the status mix of every day so far and the day's change rates (pictures)."""
    settings = crawl_settings.load()
    date, shards = context.partition_key, settings.shard_keys()
    report = build_day_report(settings.data_root, date, shards, failed_fetch_runs(context.instance, date, shards))
    folder = day_report_dir(settings.data_root, date)
    summary = summary_markdown(report)
    write_bytes_atomic(summary.encode(), folder / "summary.md")
    mix = status_mix_png(report.status_mix)
    write_bytes_atomic(mix, folder / "status_mix.png")
    pictures = picture("status_mix", folder / "status_mix.png", mix, f"Status mix up to {date}")
    rates = change_rates(settings.data_root, date)
    if rates is not None:  # once change_stats has run for the day
        histogram = change_rate_png(rates.to_pylist())
        write_bytes_atomic(histogram, folder / "change_rates.png")
        pictures |= picture("change_rates", folder / "change_rates.png", histogram, f"Change rates on {date}")
    # The day in one row, the report's own table: its columns are the asset's column schema.
    table = day_report_table(report, day_figures(settings.data_root, date).fetch_numbers())
    write_parquet_atomic(table, folder / "day_report.parquet")
    return MaterializeResult(metadata={
        **table.to_pylist()[0],  # the day's figures as numbers: the asset page's Plots draw them
        "summary": MetadataValue.md(summary), **tables_metadata(report), **table_metadata(table),
        **pictures, **host_events_metadata(report), **tls_metadata(report),
    })


def tables_metadata(report) -> dict:
    """The day's status classes, drop reasons and the hosts spaced widest and answering 429 most."""
    return {"status_classes": counts_table(report.status_classes, "status_class", "pages",
                                           counted="Fetch-log rows of the day with this outcome."),
            "drop_reasons": counts_table(report.drop_reasons, "reason", "urls",
                                         counted="URLs the trap defences refused for the reason."),
            "hosts_widest_spacing": arrow_table(report.hosts.widest_spacing),
            "hosts_most_429": arrow_table(report.hosts.most_429)}


def host_events_metadata(report) -> dict:
    """The day's host events with most pages seen moving together (the file has every host)."""
    if report.host_events is None:
        return {}
    return {"host_events": arrow_table(report.host_events.slice(0, TOP_HOST_EVENTS))}


def tls_metadata(report) -> dict:
    """URLs lost to TLS failures by name (certificate expired, name mismatch, ...); their sum is
    the day's row's tls_failures."""
    return {"tls_failures_by_class": counts_table(report.tls_failures, "status_class", "urls",
                                                  counted="URLs lost to the TLS failure.")}
