"""frontier_snapshot[D]: seeds plus every link discovered before day D, split by host shard."""

import duckdb
import pyarrow as pa
from dagster import AssetExecutionContext, AssetKey, MaterializeResult, MetadataValue, asset

from ..crawler.batch import in_scope
from ..crawler.settings import CrawlSettings, shard_key
from ..crawler.sharding import shard_of
from ..crawler.tables import FRONTIER_SCHEMA
from ..layout import frontier_file, glob_of, seeds_file, write_parquet_atomic
from ..partitions import daily_partitions
from ..resources import CrawlSettingsResource

FRONTIER_SQL = """
WITH candidates AS (
    SELECT url, host, 0 AS depth FROM read_parquet($seeds)
    {links_part}
), best AS (
    SELECT url, any_value(host) AS host, min(depth)::INTEGER AS depth
    FROM candidates
    WHERE in_scope(host)
    GROUP BY url
)
SELECT url, host, depth, shard_of(host) AS shard
FROM best
-- Per-host budget per cycle: shallowest pages first, ties by URL for a stable choice.
QUALIFY row_number() OVER (PARTITION BY host ORDER BY depth, url) <= $max_pages_per_host
ORDER BY shard, host, depth, url
"""

LINKS_PART = """
    UNION ALL
    SELECT target AS url, target_host AS host, depth
    FROM read_parquet($links_glob, hive_partitioning = true)
    WHERE CAST(date AS DATE) < CAST($date AS DATE)
"""


def build_frontier(settings: CrawlSettings, date: str) -> pa.Table:
    """The day's frontier as one Arrow table with a shard column (DuckDB does the work)."""
    con = duckdb.connect()
    con.create_function("shard_of", lambda host: shard_key(shard_of(host, settings.shard_count)),
                        ["VARCHAR"], "VARCHAR")
    con.create_function("in_scope", lambda host: in_scope(host, settings), ["VARCHAR"], "BOOLEAN")
    root = settings.data_root
    has_links = any((root / "links").glob("date=*/shard=*/*.parquet"))
    params = {"seeds": str(seeds_file(root)), "max_pages_per_host": settings.max_pages_per_host}
    if has_links:
        params |= {"links_glob": glob_of(root, "links"), "date": date}
    sql = FRONTIER_SQL.format(links_part=LINKS_PART if has_links else "")
    return con.execute(sql, params).to_arrow_table()


@asset(
    group_name="frontier",
    partitions_def=daily_partitions,
    deps=[AssetKey("seeds")],
)
def frontier_snapshot(context: AssetExecutionContext, crawl_settings: CrawlSettingsResource) -> MaterializeResult:
    """Seeds and links found on earlier days, normalised, de-duplicated, one file per shard.

    Links come from the links files on disk rather than as a declared dependency: the
    frontier of day D reads fetch results of days before D, and Dagster has no cycles.
    """
    settings = crawl_settings.load()
    date = context.partition_key
    if not seeds_file(settings.data_root).exists():
        raise FileNotFoundError(f"{seeds_file(settings.data_root)} is missing: materialise `seeds` first")
    frontier = build_frontier(settings, date)
    shards = frontier.column("shard").to_pylist()
    per_shard = {}
    for shard in settings.shard_keys():
        rows = frontier.filter(pa.array([s == shard for s in shards])).select(FRONTIER_SCHEMA.names)
        write_parquet_atomic(rows.cast(FRONTIER_SCHEMA), frontier_file(settings.data_root, date, shard))
        per_shard[shard] = rows.num_rows
    return MaterializeResult(metadata={
        "urls": frontier.num_rows,
        "hosts": len(set(frontier.column("host").to_pylist())),
        "urls_per_shard": MetadataValue.json(per_shard),
        "path": MetadataValue.path(str(frontier_file(settings.data_root, date, "*").parent.parent)),
    })
