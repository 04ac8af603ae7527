"""crawl_catalog: data/crawl.duckdb, views over every Parquet output for analysts."""

from dagster import AssetExecutionContext, AssetKey, MaterializeResult, MetadataValue, asset

from ..checks import CATALOG_CHECKS, catalog_check_results
from ..pipeline.catalog_step import build_catalog
from ..resources import CrawlSettingsResource


@asset(group_name="catalog", deps=[AssetKey("fetch_batch"), AssetKey("frontier_snapshot"),
                                   AssetKey("seeds"), AssetKey("url_registry"),
                                   AssetKey("near_duplicate_clusters")],
       check_specs=CATALOG_CHECKS)
def crawl_catalog(context: AssetExecutionContext, crawl_settings: CrawlSettingsResource) -> MaterializeResult:
    """The DuckDB file analysts open read-only: views seeds, frontier, fetches, pages, links,
    urls (every URL ever discovered), dropped_urls (what the trap defences refused, why),
    near_duplicates and host_near_dup_ratio."""
    settings = crawl_settings.load()
    catalog = build_catalog(settings.data_root, settings.catalog_path)
    checks = catalog_check_results(settings.data_root, catalog.path)
    return MaterializeResult(check_results=checks, metadata={
        "path": MetadataValue.path(str(catalog.path)),
        "rows": MetadataValue.json(dict(catalog.rows)),
        **{f"rows_{view}": n for view, n in catalog.rows.items()},
    })
