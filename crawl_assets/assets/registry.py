"""url_registry[D]: every URL ever discovered up to day D (the authoritative record), and
seen_url_filter[D]: a Bloom filter rebuilt from it, loaded by the next day's fetch batches."""

import duckdb
import pyarrow as pa
from dagster import AssetExecutionContext, AssetKey, MaterializeResult, MetadataValue, asset

from ..crawler.seen_filter import DEFAULT_FP_RATE, build_filter, load_filter, measured_fp_rate, save_filter
from ..crawler.settings import CrawlSettings
from ..layout import glob_of, has_partition_files, seeds_file, seen_filter_file, url_registry_file, write_parquet_atomic
from ..partitions import daily_partitions
from ..resources import CrawlSettingsResource

# first_seen: the day a URL was first linked (seeds count from the registry's own day);
# discovered_from: the page that linked it first; last_fetched: its latest answered fetch.
REGISTRY_SQL = """
WITH found AS (
    SELECT url, CAST($date AS DATE) AS day, NULL::VARCHAR AS source, 0 AS depth FROM read_parquet($seeds)
    {links_part}
), fetched AS (
    {fetched_part}
)
SELECT found.url, min(found.day) AS first_seen, min(found.depth)::INTEGER AS depth,
       arg_min(found.source, found.day) AS discovered_from, any_value(fetched.last_fetched) AS last_fetched
FROM found LEFT JOIN fetched USING (url)
GROUP BY found.url
ORDER BY found.url
"""

LINKS_PART = """
    UNION ALL
    SELECT target, CAST(date AS DATE), source, depth
    FROM read_parquet($links_glob, hive_partitioning = true)
    WHERE CAST(date AS DATE) <= CAST($date AS DATE)
"""

FETCHED_PART = """
    SELECT url, max(fetched_at) AS last_fetched
    FROM read_parquet($fetch_glob, hive_partitioning = true, union_by_name = true)
    WHERE CAST(date AS DATE) <= CAST($date AS DATE) AND status IS NOT NULL
    GROUP BY url
"""


def build_registry(settings: CrawlSettings, date: str) -> pa.Table:
    root = settings.data_root
    params = {"seeds": str(seeds_file(root)), "date": date}
    links, fetches = has_partition_files(root, "links"), has_partition_files(root, "fetch_log")
    if links:
        params["links_glob"] = glob_of(root, "links")
    if fetches:
        params["fetch_glob"] = glob_of(root, "fetch_log")
    sql = REGISTRY_SQL.format(
        links_part=LINKS_PART if links else "",
        fetched_part=FETCHED_PART if fetches else
        "SELECT NULL::VARCHAR AS url, NULL::TIMESTAMPTZ AS last_fetched WHERE false")
    return duckdb.connect().sql(sql, params=params).to_arrow_table()


@asset(group_name="seen", partitions_def=daily_partitions,
       deps=[AssetKey("seeds"), AssetKey("fetch_batch")])
def url_registry(context: AssetExecutionContext, crawl_settings: CrawlSettingsResource) -> MaterializeResult:
    """Every URL discovered up to the day: first seen, depth, discovered from, last fetched."""
    settings = crawl_settings.load()
    date = context.partition_key
    registry = build_registry(settings, date)
    path = url_registry_file(settings.data_root, date)
    write_parquet_atomic(registry, path)
    fetched = registry.column("last_fetched").null_count
    return MaterializeResult(metadata={
        "urls": registry.num_rows,
        "never_fetched": fetched,
        "path": MetadataValue.path(str(path)),
    })


@asset(group_name="seen", partitions_def=daily_partitions, deps=[AssetKey("url_registry")])
def seen_url_filter(context: AssetExecutionContext, crawl_settings: CrawlSettingsResource) -> MaterializeResult:
    """A Bloom filter (default 0.1% false positives) of every URL in the day's registry.

    A false positive means a URL wrongly taken for known, a page that may never be fetched:
    that is why the rate is low, paid for with about 1.8 bytes per URL."""
    settings = crawl_settings.load()
    date = context.partition_key
    urls = duckdb.connect().sql("SELECT url FROM read_parquet($p)",
                                params={"p": str(url_registry_file(settings.data_root, date))})
    column = urls.to_arrow_table().column("url").to_pylist()
    bloom = build_filter(column, len(column), DEFAULT_FP_RATE)
    path = seen_filter_file(settings.data_root, date)
    save_filter(bloom, path)
    reloaded = load_filter(path)  # measure what the fetch batches will load
    return MaterializeResult(metadata={
        "elements": len(column),
        "bits": reloaded.size_in_bits,
        "bytes": path.stat().st_size,
        "target_fp_rate": DEFAULT_FP_RATE,
        "measured_fp_rate": measured_fp_rate(reloaded, 100_000),
        "path": MetadataValue.path(str(path)),
    })
