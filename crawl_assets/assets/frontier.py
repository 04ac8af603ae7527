"""frontier_snapshot[D]: seeds plus every link discovered before day D, split by host shard."""

import duckdb
import pyarrow as pa
from dagster import AssetExecutionContext, AssetKey, MaterializeResult, MetadataValue, asset

from ..crawler.batch import in_scope
from ..crawler.settings import CrawlSettings
from ..crawler.sharding import shard_key
from ..crawler.sharding import shard_of
from ..crawler.tables import FRONTIER_SCHEMA
from ..crawler.trap_defences import Blocklist, TrapDefences, TrapLimits, url_pattern
from ..layout import columns_of, frontier_file, glob_of, has_partition_files, seeds_file, write_parquet_atomic
from ..partitions import daily_partitions
from ..resources import CrawlSettingsResource

FRONTIER_CTES = """
WITH candidates AS (
    SELECT url, host, 0 AS depth FROM read_parquet($seeds)
    {links_part}
), best AS (
    SELECT url, any_value(host) AS host, min(depth)::INTEGER AS depth
    FROM candidates
    GROUP BY url
), judged AS (
    SELECT *, in_scope(host) AS scoped, trap_reason(url, host) AS trap FROM best
), within_patterns AS (
    -- Calendars, facets: at most max_urls_per_pattern URLs of one query shape per host.
    SELECT url, host, depth FROM judged WHERE scoped AND trap IS NULL
    QUALIFY url_pattern(url) IS NULL
         OR row_number() OVER (PARTITION BY host, url_pattern(url) ORDER BY depth, url)
            <= $max_urls_per_pattern
), chosen AS (
    SELECT url, host, depth, shard_of(host) AS shard,
           -- until recrawl priorities exist: seeds first, deeper pages later
           least(depth + 1, $levels)::INTEGER AS priority
    FROM within_patterns
    -- Per-host budget per cycle: shallowest pages first, ties by URL for a stable choice.
    QUALIFY row_number() OVER (PARTITION BY host ORDER BY depth, url) <= $max_pages_per_host
)
"""

FRONTIER_SELECT = """
SELECT chosen.*, {validators}
FROM chosen {validators_join}
ORDER BY shard, host, depth, url
"""

# Known URLs left out of the day's frontier, by reason (each URL counted once).
LEFT_OUT_SELECT = """
SELECT reason, count(*) AS urls FROM (
    SELECT CASE WHEN NOT scoped THEN 'out_of_scope' ELSE trap END AS reason FROM judged
    UNION ALL
    SELECT 'pattern_budget' FROM judged
    WHERE scoped AND trap IS NULL AND url NOT IN (SELECT url FROM within_patterns)
    UNION ALL
    SELECT 'host_budget' FROM within_patterns WHERE url NOT IN (SELECT url FROM chosen)
) WHERE reason IS NOT NULL
GROUP BY reason ORDER BY reason
"""

LINKS_PART = """
    UNION ALL
    SELECT target AS url, target_host AS host, depth
    FROM read_parquet($links_glob, hive_partitioning = true, union_by_name = true)
    WHERE CAST(date AS DATE) < CAST($date AS DATE) {not_dropped}
"""

# The validators of each URL's latest answer, so the fetch can be a conditional GET, and
# when it was last captured whole, so a 304 revisit record can point at that capture.
VALIDATORS_JOIN = """
LEFT JOIN (
    SELECT url, arg_max(etag, fetched_at) AS etag, arg_max(last_modified, fetched_at) AS last_modified,
           max(fetched_at) FILTER (WHERE status = 200) AS last_captured_at
    FROM read_parquet($fetch_glob, hive_partitioning = true, union_by_name = true)
    WHERE CAST(date AS DATE) < CAST($date AS DATE) AND status IN (200, 304)
    GROUP BY url
) AS latest USING (url)
"""


def build_frontier(settings: CrawlSettings, date: str) -> tuple[pa.Table, dict[str, int]]:
    """The day's frontier as one Arrow table with a shard column (DuckDB does the work), and
    how many known URLs were left out, by reason."""
    con = duckdb.connect()
    con.create_function("shard_of", lambda host: shard_key(shard_of(host, settings.shard_count)),
                        ["VARCHAR"], "VARCHAR")
    con.create_function("in_scope", lambda host: in_scope(host, settings), ["VARCHAR"], "BOOLEAN")
    traps = TrapDefences(TrapLimits.from_settings(settings), Blocklist.read(settings.blocklist_file))
    con.create_function("trap_reason", traps.intrinsic_reason, ["VARCHAR", "VARCHAR"], "VARCHAR",
                        null_handling="special")  # None means "no trap": a real answer
    con.create_function("url_pattern", url_pattern, ["VARCHAR"], "VARCHAR", null_handling="special")
    root = settings.data_root
    params = {"seeds": str(seeds_file(root)), "max_pages_per_host": settings.max_pages_per_host,
              "max_urls_per_pattern": settings.max_urls_per_pattern,
              "levels": len(settings.priority_weights)}
    has_links = has_partition_files(root, "links")
    has_fetches = has_partition_files(root, "fetch_log")
    if has_links or has_fetches:
        params["date"] = date
    if has_links:
        params["links_glob"] = glob_of(root, "links")
    if has_fetches:
        params["fetch_glob"] = glob_of(root, "fetch_log")
    links_part = ""
    if has_links:
        # Links files from before the trap defences have no dropped_reason column.
        links_part = LINKS_PART.format(not_dropped="AND dropped_reason IS NULL"
                                       if "dropped_reason" in columns_of(params["links_glob"]) else "")
    ctes = FRONTIER_CTES.format(links_part=links_part)
    select = FRONTIER_SELECT.format(
        validators="latest.etag, latest.last_modified, latest.last_captured_at" if has_fetches
        else "NULL::VARCHAR AS etag, NULL::VARCHAR AS last_modified, "
             "NULL::TIMESTAMPTZ AS last_captured_at",
        validators_join=VALIDATORS_JOIN if has_fetches else "",
    )
    frontier = con.sql(ctes + select, params=params).to_arrow_table()
    count_params = {k: v for k, v in params.items() if k != "fetch_glob"}
    left_out = dict(con.execute(ctes + LEFT_OUT_SELECT, count_params).fetchall())
    return frontier, left_out


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
    frontier, left_out = build_frontier(settings, date)
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
        "urls_left_out": sum(left_out.values()),
        "urls_left_out_by_reason": MetadataValue.json(left_out),
        "path": MetadataValue.path(str(frontier_file(settings.data_root, date, "*").parent.parent)),
    })
