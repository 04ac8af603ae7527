"""crawl_catalog[D]: data/crawl.duckdb, views over every Parquet output for analysts, rebuilt
when day D closes.

Daily partitions, each depending on that day's outputs only: an unpartitioned catalog would
depend on every fetch partition since the start date and look stale in the UI forever. The
file always holds views over everything landed so far (the latest build wins); each build
writes a file of its own and renames it over the catalog (pipeline/catalog_step.py), so two
builds at once do not collide.
"""

import warnings

from dagster import (
    AssetDep,
    AssetExecutionContext,
    AssetKey,
    MaterializeResult,
    MetadataValue,
    MultiToSingleDimensionPartitionMapping,
    asset,
)

from ...pipeline.catalog_step import build_catalog
from ..checks import CATALOG_CHECKS, catalog_check_results
from ..partitions import daily_partitions
from ..resources import CrawlSettingsResource
from .failures import fails_with_crawl_errors
from .fetch import FETCH_ASSETS

with warnings.catch_warnings():  # the mapping is marked beta; it is the documented way to do this
    warnings.simplefilter("ignore")
    EVERY_SHARD_OF_THE_DAY = MultiToSingleDimensionPartitionMapping(partition_dimension_name="date")

DAY_OUTPUTS = [
    AssetKey("seeds"), AssetKey("frontier_snapshot"), AssetKey("url_registry"),
    AssetKey("near_duplicate_clusters"),
    *(AssetDep(AssetKey(key), partition_mapping=EVERY_SHARD_OF_THE_DAY) for key in FETCH_ASSETS),
]


@asset(group_name="catalog", partitions_def=daily_partitions, deps=DAY_OUTPUTS, check_specs=CATALOG_CHECKS)
@fails_with_crawl_errors
def crawl_catalog(context: AssetExecutionContext, crawl_settings: CrawlSettingsResource) -> MaterializeResult:
    """The DuckDB file analysts open read-only: views seeds, frontier, fetches, pages, links,
    captures, urls (every URL ever discovered), dropped_urls (what the trap defences refused,
    why), near_duplicates and host_near_dup_ratio (docs/CATALOG.md)."""
    settings = crawl_settings.load()
    catalog = build_catalog(settings.data_root, settings.catalog_path)
    checks = catalog_check_results(settings.data_root, catalog.path)
    return MaterializeResult(check_results=checks, metadata={
        "path": MetadataValue.path(str(catalog.path)),
        "built_for_day": context.partition_key,
        "rows": MetadataValue.json(dict(catalog.rows)),
        **{f"rows_{view}": n for view, n in catalog.rows.items()},
    })
