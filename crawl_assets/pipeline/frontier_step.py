"""The frontier step: the day's frontier, every known URL within the budgets, split by shard.

Inputs are explicit: the seed table, the links and fetch logs of the days before D
(`crawl_history.history_before` lists them), and the plan recrawl_priorities made for D the
day before (`recrawl_inputs.load_plan`). With a plan, the frontier holds the URLs it planned
(due on D, by expected gain, within the daily budget and each host's cap, at its front-queue
level) and known URLs the plan has not seen yet (seeds added since); the rest of the known
URLs are left out as not planned. Without one (the first day) it holds every known URL within
the budgets, shallowest first. DuckDB does the work in one pass over the
known URLs: each URL's fate (kept, or left out and why) is decided once and kept in a temporary table, from
which both the frontier and the left-out counts are read. The rules that live in Python
(host scope, shard, trap defences, URL pattern) are called vectorised over Arrow batches;
scope and shard once per distinct host, not per URL.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import duckdb
import pyarrow as pa

from ..crawler.batch import in_scope
from ..crawler.settings import CrawlSettings
from ..crawler.sharding import shard_key, shard_of
from ..crawler.tables import FRONTIER_SCHEMA
from ..crawler.trap_defences import Blocklist, TrapDefences, TrapLimits, url_pattern
from ..crawler.vocabulary import DropReason
from ..layout import columns_of
from .crawl_history import CrawlHistory


@dataclass(frozen=True)
class FrontierCounts:
    urls: int
    hosts: int
    urls_per_shard: Mapping[str, int]  # every shard of the settings, in shard order
    left_out_by_reason: Mapping[str, int]  # known URLs not in the frontier, each counted once

    @property
    def left_out(self) -> int:
        return sum(self.left_out_by_reason.values())


@dataclass(frozen=True)
class FrontierResult:
    # FRONTIER_SCHEMA plus a shard column, ordered by shard number, host, depth, url.
    table: pa.Table
    counts: FrontierCounts

    def shard_tables(self) -> Iterator[tuple[str, pa.Table]]:
        """Each shard's rows in FRONTIER_SCHEMA, every shard of the settings (an empty table
        for a shard without URLs); zero-copy slices, since the table is ordered by shard."""
        start = 0
        for shard, rows in self.counts.urls_per_shard.items():
            part = self.table.slice(start, rows)
            assert rows == 0 or part["shard"][0].as_py() == shard == part["shard"][-1].as_py(), shard
            start += rows
            yield shard, part.select(FRONTIER_SCHEMA.names).cast(FRONTIER_SCHEMA)
        assert start == self.table.num_rows


# Every known URL once, with its fate: `left_out` is NULL for a URL in today's frontier,
# else the reason it was left out. Materialised once: the frontier and the counts read it.
FATES_SQL = """
CREATE TEMP TABLE fates AS
WITH
-- candidates: the seeds at depth 0, and every link target found on an earlier day that no
-- trap defence refused when it was found.
candidates AS (
    SELECT url, host, 0 AS depth FROM read_parquet($seeds)
    {links_part}
),
-- known: each URL once, at the shallowest depth it was found.
known AS (
    SELECT url, any_value(host) AS host, min(depth)::INTEGER AS depth
    FROM candidates GROUP BY url
),
-- hosts: scope and shard (its number, for the order, and its key) of each distinct host:
-- Python rules, run once per host.
hosts AS MATERIALIZED (
    SELECT host, scoped, shard_no, shard_key(shard_no) AS shard
    FROM (SELECT host, in_scope(host) AS scoped, shard_of(host) AS shard_no FROM (SELECT DISTINCT host FROM known))
),
-- judged: the trap defences' verdict (URL shape, blocklist) on the URLs in scope, the
-- query shape of each URL with a query, and the plan's word on it (NULL: not in the plan).
judged AS (
    SELECT known.*, hosts.scoped, hosts.shard_no, hosts.shard,
           CASE WHEN hosts.scoped THEN trap_reason(url, host) END AS trap,
           CASE WHEN hosts.scoped THEN url_pattern(url) END AS pattern,
           {plan_columns}
    FROM known JOIN hosts USING (host) {plan_join}
),
-- pattern_ranked: a URL's rank within its host and query shape among the URLs that passed
-- scope and traps (they form their own partition), shallowest first, ties by URL for a
-- stable choice. row_number over a partition is far cheaper than a filtered running count.
pattern_ranked AS (
    SELECT *, scoped AND trap IS NULL AS eligible,
           row_number() OVER (PARTITION BY host, pattern, eligible ORDER BY depth, url) AS pattern_rank
    FROM judged
),
-- within_patterns: calendars and facets get at most max_urls_per_pattern URLs of one query
-- shape per host.
within_patterns AS (
    SELECT *, eligible AND (pattern IS NULL OR pattern_rank <= $max_urls_per_pattern) AS within_patterns
    FROM pattern_ranked
),
-- host_ranked: a URL's rank within its host among the URLs within their pattern budget and
-- not refused by the plan (again their own partition), for the per-host budget per cycle:
-- in the plan's order, then shallowest first, ties by URL.
host_ranked AS (
    SELECT *, within_patterns AND coalesce(planned, true) AS wanted,
           row_number() OVER (PARTITION BY host, wanted ORDER BY plan_rank NULLS LAST, depth, url) AS host_rank
    FROM within_patterns
)
SELECT url, host, depth, shard_no, shard, plan_rank, level,
       CASE WHEN NOT scoped THEN $out_of_scope
            WHEN trap IS NOT NULL THEN trap
            WHEN NOT within_patterns THEN $pattern_budget
            WHEN NOT planned THEN $not_planned
            WHEN host_rank > $max_pages_per_host THEN $host_budget
       END AS left_out
FROM host_ranked
"""

# Link targets of earlier days (files written before the trap defences lack dropped_reason).
LINKS_PART = """
    UNION ALL
    SELECT target AS url, target_host AS host, depth
    FROM read_parquet($links, union_by_name = true)
    {not_dropped}
"""

# The frontier: the kept URLs with a priority (the plan's front-queue level; without one,
# seeds first and deeper pages later) and the validators of their latest answer; within a
# shard in the plan's order (expected gain), then by host, depth and URL.
FRONTIER_SQL = """
SELECT url, host, depth, coalesce(level, least(depth + 1, $levels))::INTEGER AS priority, {validators}, shard
FROM fates {validators_join}
WHERE left_out IS NULL
ORDER BY shard_no, plan_rank NULLS LAST, host, depth, url
"""

# The plan's columns in `judged`, with and without a plan.
PLAN_JOIN = "LEFT JOIN plan USING (url)"
PLAN_COLUMNS = "plan.planned, plan.plan_rank, plan.level"
NO_PLAN_COLUMNS = "NULL::BOOLEAN AS planned, NULL::BIGINT AS plan_rank, NULL::INTEGER AS level"

# The validators of each URL's latest answer, so the fetch can be a conditional GET, and
# when it was last captured whole, so a 304 revisit record can point at that capture.
VALIDATORS_JOIN = """
LEFT JOIN (
    SELECT url, arg_max(etag, fetched_at) AS etag, arg_max(last_modified, fetched_at) AS last_modified,
           max(fetched_at) FILTER (WHERE status = 200) AS last_captured_at,
           arg_max(payload_digest, fetched_at) FILTER (WHERE status = 200) AS last_payload_digest
    FROM read_parquet($fetch_logs, union_by_name = true)
    WHERE status IN (200, 304)
    GROUP BY url
) AS latest USING (url)
"""
NO_VALIDATORS = ("NULL::VARCHAR AS etag, NULL::VARCHAR AS last_modified, "
                 "NULL::TIMESTAMPTZ AS last_captured_at, NULL::VARCHAR AS last_payload_digest")

# Known URLs left out of the day's frontier, by reason.
LEFT_OUT_SQL = """
SELECT left_out AS reason, count(*) AS urls FROM fates
WHERE left_out IS NOT NULL GROUP BY left_out ORDER BY left_out
"""


def build_frontier(settings: CrawlSettings, inputs: CrawlHistory, plan: pa.Table | None = None) -> FrontierResult:
    """The day's frontier as one Arrow table with a shard column, and its counts.

    plan: the day's plan (url, planned, plan_rank, level; recrawl_inputs.load_plan), or None."""
    con = duckdb.connect()
    register_url_rules(con, settings)
    if plan is not None:
        con.register("plan", plan.select(["url", "planned", "plan_rank", "level"]))
    fates_params = {
        "seeds": str(inputs.seeds),
        "max_pages_per_host": settings.max_pages_per_host,
        "max_urls_per_pattern": settings.max_urls_per_pattern,
        "out_of_scope": DropReason.OUT_OF_SCOPE,
        "pattern_budget": DropReason.PATTERN_BUDGET,
        "host_budget": DropReason.HOST_BUDGET,
        "not_planned": DropReason.NOT_PLANNED,
    }
    links_part = ""
    if inputs.links:
        fates_params["links"] = [str(p) for p in inputs.links]
        has_reason = "dropped_reason" in columns_of(fates_params["links"])
        links_part = LINKS_PART.format(not_dropped="WHERE dropped_reason IS NULL" if has_reason else "")
    con.execute(FATES_SQL.format(links_part=links_part, plan_columns=NO_PLAN_COLUMNS if plan is None else PLAN_COLUMNS,
                                 plan_join="" if plan is None else PLAN_JOIN), fates_params)

    frontier_params: dict = {"levels": len(settings.priority_weights)}
    if inputs.fetch_logs:
        frontier_params["fetch_logs"] = [str(p) for p in inputs.fetch_logs]
    frontier = con.sql(FRONTIER_SQL.format(
        validators="latest.etag, latest.last_modified, latest.last_captured_at, latest.last_payload_digest"
        if inputs.fetch_logs else NO_VALIDATORS,
        validators_join=VALIDATORS_JOIN if inputs.fetch_logs else "",
    ), params=frontier_params).to_arrow_table()
    left_out = dict(con.execute(LEFT_OUT_SQL).fetchall())
    found = dict(con.execute(
        "SELECT shard, count(*) FROM fates WHERE left_out IS NULL GROUP BY shard").fetchall())
    per_shard = {shard: found.pop(shard, 0) for shard in settings.shard_keys()}
    assert not found, f"shards outside the settings' {settings.shard_count}: {sorted(found)}"
    hosts = con.execute("SELECT count(DISTINCT host) FROM fates WHERE left_out IS NULL").fetchone()[0]
    counts = FrontierCounts(frontier.num_rows, hosts, per_shard, left_out)
    assert sum(per_shard.values()) == frontier.num_rows
    return FrontierResult(frontier, counts)


def register_url_rules(con: duckdb.DuckDBPyConnection, settings: CrawlSettings) -> None:
    """The Python rules the frontier SQL calls, each vectorised over an Arrow batch."""
    traps = TrapDefences(TrapLimits.from_settings(settings), Blocklist.read(settings.blocklist_file))

    def shard(hosts: pa.Array) -> pa.Array:
        return pa.array([shard_of(h, settings.shard_count) for h in hosts.to_pylist()], pa.int32())

    def key(shards: pa.Array) -> pa.Array:
        return pa.array([shard_key(n) for n in shards.to_pylist()], pa.string())

    def scoped(hosts: pa.Array) -> pa.Array:
        return pa.array([in_scope(h, settings) for h in hosts.to_pylist()], pa.bool_())

    def trap_reason(urls: pa.Array, hosts: pa.Array) -> pa.Array:
        return pa.array(list(map(traps.intrinsic_reason, urls.to_pylist(), hosts.to_pylist())), pa.string())

    def pattern(urls: pa.Array) -> pa.Array:
        return pa.array(list(map(url_pattern, urls.to_pylist())), pa.string())

    con.create_function("shard_of", shard, ["VARCHAR"], "INTEGER", type="arrow")
    con.create_function("shard_key", key, ["INTEGER"], "VARCHAR", type="arrow")
    con.create_function("in_scope", scoped, ["VARCHAR"], "BOOLEAN", type="arrow")
    # NULL is a real answer of these two ("no trap", "no query"): special null handling.
    con.create_function("trap_reason", trap_reason, ["VARCHAR", "VARCHAR"], "VARCHAR", type="arrow",
                        null_handling="special")
    con.create_function("url_pattern", pattern, ["VARCHAR"], "VARCHAR", type="arrow", null_handling="special")
