"""Asset checks: thin wrappers over crawl_assets/pipeline/checks_step.py. The partitioned
assets declare these specs and return the results with their materialisation (partitioned
@asset_check is still a preview in Dagster 1.13). Blocking where a bad output would poison
what comes after: a fetch batch that was impolite, lost frontier URLs or points at the wrong
WARC records must not feed the day's registry and catalog."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
from dagster import AssetCheckResult, AssetCheckSeverity, AssetCheckSpec, MetadataValue

from ..crawler.settings import CrawlSettings
from ..pipeline import checks_step
from ..pipeline.checks_step import Verdict
from ..storage.layout import glob_of

FETCH_CHECKS = [
    AssetCheckSpec("polite_spacing", asset="fetch_log", blocking=True,
                   description="No two requests to one host closer than default_delay_s, "
                               "from the fetch log's own start times and durations."),
    AssetCheckSpec("frontier_accounted_for", asset="fetch_log", blocking=True,
                   description="Every frontier URL has a fetch-log row (fetched, refused with a reason, deferred)."),
    AssetCheckSpec("warc_offsets_match", asset="warc_archive", blocking=True,
                   description="warcio and FastWARC read every WARC file, and each fetch-log offset "
                               "is a record of that URL and kind."),
]
SEEN_FILTER_CHECKS = [
    AssetCheckSpec("fp_rate_within_target", asset="seen_url_filter", blocking=True,
                   description="The Bloom filter's measured false-positive rate is within its target: "
                               "a false positive is a page never fetched."),
]
CATALOG_CHECKS = [
    AssetCheckSpec("row_counts_match_files", asset="crawl_catalog", blocking=True,
                   description="Each plain view has exactly the rows of its Parquet files."),
    AssetCheckSpec("warc_files_whole", asset="crawl_catalog", blocking=True,
                   description="Every indexed WARC file, of every day so far, reaches the end of its last "
                               "indexed record: a file cut short after its batch loses captures."),
]
# Catalog views that read one table's files as they are.
PLAIN_VIEWS = {"fetches": "fetch_log", "links": "links", "frontier": "frontier", "dropped_urls": "dropped_urls"}


def _result(spec: AssetCheckSpec, verdict: Verdict) -> AssetCheckResult:
    metadata = {"failures": verdict.failures}
    if verdict.examples:
        metadata["examples"] = MetadataValue.md("\n".join(f"- {e}" for e in verdict.examples))
    if verdict.measured is not None:
        metadata["measured"] = verdict.measured
    return AssetCheckResult(asset_key=spec.asset_key, check_name=spec.name, passed=verdict.passed,
                            metadata=metadata, severity=AssetCheckSeverity.ERROR,
                            description=_first_failure(verdict))


def _first_failure(verdict: Verdict) -> str | None:
    """A failed check's description: its first example, the sentence a command prints."""
    if verdict.passed or not verdict.examples:
        return None
    more = f" (and {verdict.failures - 1} more: the check's examples list them)" if verdict.failures > 1 else ""
    return verdict.examples[0] + more


def fetch_check_results(settings: CrawlSettings, fetch_log: pa.Table, frontier: pa.Table,
                        warc_dir: Path) -> list[AssetCheckResult]:
    spacing, accounted, warc = FETCH_CHECKS
    return [_result(spacing, checks_step.politeness(fetch_log, settings.default_delay_s)),
            _result(accounted, checks_step.frontier_accounted_for(frontier, fetch_log)),
            _result(warc, checks_step.warc_records_match(fetch_log, warc_dir))]


def seen_filter_check_results(measured_fp_rate: float, target_fp_rate: float) -> list[AssetCheckResult]:
    return [_result(SEEN_FILTER_CHECKS[0], checks_step.seen_filter_rate(measured_fp_rate, target_fp_rate))]


def catalog_check_results(root: Path, catalog_path: Path) -> list[AssetCheckResult]:
    globs = {view: glob_of(root, table) for view, table in PLAIN_VIEWS.items()}
    row_counts, warc_files = CATALOG_CHECKS
    return [_result(row_counts, checks_step.catalog_row_counts(catalog_path, globs)),
            _result(warc_files, checks_step.warc_files_whole(catalog_path, root))]
