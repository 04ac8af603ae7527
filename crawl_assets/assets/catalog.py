"""crawl_catalog: data/crawl.duckdb, views over every Parquet output for analysts.

The catalog holds views, not copies, so it is small and always reads the latest files. It is
built under a temporary name and renamed, so an analyst never opens a half-built catalog;
partitioned assets never open it, so DuckDB's one-writer rule holds.
"""

import os
from pathlib import Path

import duckdb
from dagster import AssetExecutionContext, AssetKey, MaterializeResult, MetadataValue, asset

from ..layout import glob_of, seeds_file
from ..resources import CrawlSettingsResource

# pages: each URL's latest full answer (a 304 carries no content, so it only updates
# last_checked_at and last_status_class).
PAGES_SQL = """
SELECT src.*, checked.last_checked_at, checked.last_status_class
FROM src JOIN (
    SELECT url, max(fetched_at) AS last_checked_at, arg_max(status_class, fetched_at) AS last_status_class
    FROM src GROUP BY url
) AS checked USING (url)
WHERE src.status_class <> 'not_modified'
QUALIFY row_number() OVER (PARTITION BY url ORDER BY fetched_at DESC) = 1
"""

# view name -> (hive table folder, SQL over `src`)
PARTITIONED_VIEWS = {
    "fetches": ("fetch_log", "SELECT * FROM src"),
    "pages": ("fetch_log", PAGES_SQL),
    "links": ("links", "SELECT * FROM src"),
    "frontier": ("frontier", "SELECT * FROM src"),
    "dropped_urls": ("dropped_urls", "SELECT * FROM src"),
}

# Daily full snapshots (view name -> table folder): each view shows the newest day.
LATEST_SNAPSHOT_VIEWS = {
    "urls": "url_registry",
    "near_duplicates": "near_duplicates",
    "host_near_dup_ratio": "host_quality",
}
LATEST_SQL = """
CREATE VIEW {view} AS
SELECT * EXCLUDE (date) FROM read_parquet('{glob}', hive_partitioning = true)
WHERE date = (SELECT max(date) FROM read_parquet('{glob}', hive_partitioning = true))
"""


def build_catalog(root: Path, catalog_path: Path) -> dict[str, int]:
    """(Re)build the catalog; returns the row count of every view it created."""
    tmp = catalog_path.with_name(catalog_path.name + ".tmp")
    tmp.unlink(missing_ok=True)
    catalog_path.parent.mkdir(parents=True, exist_ok=True)
    counts: dict[str, int] = {}
    with duckdb.connect(str(tmp)) as con:
        for view, (table, body) in PARTITIONED_VIEWS.items():
            if not any((root / table).glob("date=*/shard=*/*.parquet")):
                continue
            source = f"read_parquet('{glob_of(root, table)}', hive_partitioning = true, union_by_name = true)"
            con.execute(f"CREATE VIEW {view} AS WITH src AS (SELECT * FROM {source}) {body}")
        for view, table in LATEST_SNAPSHOT_VIEWS.items():
            if any((root / table).glob("date=*/*.parquet")):
                con.execute(LATEST_SQL.format(view=view, glob=root / table / "date=*" / "*.parquet"))
        if seeds_file(root).exists():
            con.execute(f"CREATE VIEW seeds AS SELECT * FROM read_parquet('{seeds_file(root)}')")
        views = [r[0] for r in con.execute(
            "SELECT view_name FROM duckdb_views() WHERE NOT internal ORDER BY view_name").fetchall()]
        for view in views:
            counts[view] = con.execute(f"SELECT count(*) FROM {view}").fetchone()[0]
    os.replace(tmp, catalog_path)
    return counts


@asset(group_name="catalog", deps=[AssetKey("fetch_batch"), AssetKey("frontier_snapshot"),
                                   AssetKey("seeds"), AssetKey("url_registry"),
                                   AssetKey("near_duplicate_clusters")])
def crawl_catalog(context: AssetExecutionContext, crawl_settings: CrawlSettingsResource) -> MaterializeResult:
    """The DuckDB file analysts open read-only: views seeds, frontier, fetches, pages, links,
    urls (every URL ever discovered), dropped_urls (what the trap defences refused, why),
    near_duplicates and host_near_dup_ratio."""
    settings = crawl_settings.load()
    counts = build_catalog(settings.data_root, settings.catalog_path)
    return MaterializeResult(metadata={
        "path": MetadataValue.path(str(settings.catalog_path)),
        "rows": MetadataValue.json(counts),
        **{f"rows_{view}": n for view, n in counts.items()},
    })
