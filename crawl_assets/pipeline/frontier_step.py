"""The frontier step: the day's frontier, every known URL within the budgets, split by shard.

Inputs are explicit: the seed table, the links and fetch logs of the days before D
(`crawl_history.history_before` lists them), and the plan recrawl_priorities made for D the
day before (`recrawl_plan.plan_path`). With a plan, the frontier holds the URLs it planned
(due on D, by expected gain, within the daily budget and each host's cap, at its front-queue
level) and known URLs the plan has not seen yet (seeds added since); the rest of the known
URLs are left out as not planned. Without one (the first day) it holds every known URL within
the budgets, shallowest first, at most settings.first_day_budget of them (the plan holds the
daily budget on later days). DuckDB does the work in one pass over the
known URLs: each URL's fate (kept, or left out and why) is decided once and kept in a temporary table, from
which both the frontier and the left-out counts are read. The rules written in Python are
called over Arrow batches: host scope and shard once per distinct host, depth, the trap rules
and the query shape (crawler/url_policy/trap_defences.py, their one home) vectorised over the
URLs. A URL deeper than max_depth is left out whatever the plan says: the fetch batch would
refuse it (one rule for both, crawler/url_policy/depth_limit.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pyarrow as pa

from ..crawler.batches.batch import in_scope
from ..crawler.batches.arrow_schemas import FRONTIER_SCHEMA
from ..crawler.settings import CrawlSettings
from ..crawler.url_policy.depth_limit import too_deep
from ..crawler.url_policy.sharding import shard_index, shard_key, shard_of
from ..crawler.url_policy.trap_defences import Blocklist, TrapDefences, TrapLimits
from ..crawler.url_policy.urls import upgrade_sql
from ..crawler.vocabulary import DropReason
from ..storage.layout import columns_of
from ..storage.shared_root import connect
from .crawl_history import CrawlHistory, https_hosts, known_links_filter, register_url_folding


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


# candidates: the seeds at depth 0, and every link target found on an earlier day that no
# trap defence refused when it was found.
# A URL of a host known to serve https is taken as https (url_policy/urls.py, upgrade_sql).
CANDIDATES_CTE = """
candidates AS (
    SELECT {seed_url} AS url, host, 0 AS depth FROM read_parquet($seeds)
    {links_part}
)"""

# Scope and shard (its number, for the order, and its key) of each distinct host: Python
# rules, run once per host. (A table of its own: read from the known URLs, it would make
# DuckDB store all of them to read them twice.) The known URLs name their host by two 64-bit
# hashes of it, which take less of the memory the grouping needs than the string.
HOSTS_SQL = """
CREATE TEMP TABLE hosts AS
SELECT host, hash(host) AS host_hash, hash(host, 1) AS host_hash_1, scoped, shard_no, shard_key(shard_no) AS shard
FROM (SELECT host, in_scope(host) AS scoped, shard_of(host) AS shard_no FROM distinct_hosts)
{of_shard}
"""
# The distinct hosts first, in a table of their own: in one statement DuckDB pushes a shard's
# filter below the DISTINCT and calls shard_of (Python) on every candidate row, not once a host.
# Read from the host columns alone, not from the candidates (their filter and folding would
# read every column of every link row once more): a host whose links are all refused has no
# known URL to join, and its scope and shard are asked for nothing.
DISTINCT_HOSTS_SQL = """
CREATE TEMP TABLE distinct_hosts AS
SELECT DISTINCT host FROM (SELECT host FROM read_parquet($seeds) {links_hosts})
"""
LINKS_HOSTS = "UNION ALL SELECT target_host FROM read_parquet($links, union_by_name = true)"
# (a shard's frontier: its hosts only, and only their candidates are grouped)
OF_SHARD = "WHERE shard_no = $shard_no"
OF_SHARD_HOSTS = "SEMI JOIN hosts USING (host)"

# Every known URL once, judged by the rules that need no ranking: `decided` is the reason a
# URL is left out whatever the ranks (out of scope, a trap, too deep, or not planned without
# a query shape), NULL for a URL still in the running; only those keep their columns (the others are
# counted), so the ranking below reads a quarter of the rows or less.
JUDGED_SQL = """
CREATE TEMP TABLE judged AS
WITH {candidates},
-- known: each URL once, at the shallowest depth it was found.
-- (grouped by two 64-bit hashes of the URL, which compare far faster than the strings; a
-- collision needs about 2^64 URLs)
known AS (
    SELECT any_value(url) AS url, any_value(hash(host)) AS host_hash, any_value(hash(host, 1)) AS host_hash_1,
           min(depth)::INTEGER AS depth
    FROM candidates {of_shard_hosts} GROUP BY hash(url), hash(url, 1)
),
-- rules: the trap defences' verdict (URL shape, blocklist) on the URLs in scope and the query
-- shape of each URL with a query (one call a batch for both), and the plan's word on it (NULL:
-- not in the plan).
rules AS (
    SELECT known.url, hosts.host, known.depth, hosts.scoped, hosts.shard_no, hosts.shard,
           CASE WHEN hosts.scoped THEN url_rules(known.url, hosts.host) END AS verdicts,
           {plan_columns}
    FROM known JOIN hosts USING (host_hash, host_hash_1) {plan_join}
),
decided AS (
    SELECT * EXCLUDE (verdicts), verdicts.query_shape AS query_shape,
           CASE WHEN NOT scoped THEN $out_of_scope
                WHEN verdicts.trap IS NOT NULL THEN verdicts.trap
                WHEN too_deep(depth) THEN $too_deep
                WHEN verdicts.query_shape IS NULL AND NOT planned THEN $not_planned
           END AS decided
    FROM rules
)
SELECT decided, {running_columns} FROM decided
"""
# (one SELECT of CASEs: a UNION of the running and the decided URLs would read `decided` twice,
# and DuckDB would store all of it first)
RUNNING_COLUMNS = ", ".join(f"CASE WHEN decided IS NULL THEN {c} END AS {c}" for c in (
    "url", "host", "depth", "shard_no", "shard", "query_shape", "planned", "plan_rank", "level"))

# The URLs still in the running, with their fate: `left_out` is NULL for a URL in today's
# frontier, else the reason it was left out.
FATES_SQL = """
CREATE TEMP TABLE fates AS
WITH
-- within_patterns: calendars and facets get at most max_urls_per_pattern URLs of one query
-- shape per host: a URL's rank within its host and shape, shallowest first, ties by URL for
-- a stable choice. Only URLs with a shape are ranked (the sort is the costly part);
-- row_number is far cheaper than a running count.
within_patterns AS MATERIALIZED (
    -- (the plan's URLs first: a URL recrawl_priorities planned is never crowded out of its
    -- shape's budget by known URLs that were not planned)
    SELECT *, row_number() OVER (PARTITION BY host, query_shape ORDER BY plan_rank NULLS LAST, depth, url)
                <= $max_urls_per_pattern AS within_patterns
    FROM judged WHERE decided IS NULL AND query_shape IS NOT NULL
    UNION ALL
    SELECT *, true AS within_patterns
    FROM judged WHERE decided IS NULL AND query_shape IS NULL
),
-- host_ranked: a URL's rank within its host among the URLs within their pattern budget and
-- not refused by the plan, for the per-host budget per cycle: in the plan's order, then
-- shallowest first, ties by URL. Again only those URLs are ranked.
host_ranked AS (
    SELECT *, row_number() OVER (PARTITION BY host ORDER BY plan_rank NULLS LAST, depth, url) AS host_rank
    FROM within_patterns WHERE within_patterns AND coalesce(planned, true)
    UNION ALL
    SELECT *, NULL AS host_rank
    FROM within_patterns WHERE NOT (within_patterns AND coalesce(planned, true))
)
-- The URL and host are kept for the frontier's rows only: the left-out ones are counted.
SELECT CASE WHEN left_out IS NULL THEN url END AS url, CASE WHEN left_out IS NULL THEN host END AS host,
       depth, shard_no, shard, plan_rank, level, left_out
FROM (
    SELECT *,
           CASE WHEN NOT within_patterns THEN $pattern_budget
                WHEN NOT planned THEN $not_planned
                WHEN host_rank > $max_pages_per_host THEN $host_budget
           END AS left_out
    FROM host_ranked
)
"""

# Link targets of earlier days that the crawl knows (crawl_history.known_links_filter), each
# folded by the URL aliases learnt so far (crawl_history.register_url_folding).
LINKS_PART = """
    UNION ALL
    SELECT {target} AS url, target_host AS host, depth
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
# Only the planned URLs are joined (a tenth of the known ones, or less); a known URL the plan
# has not seen is a seed added since it was made (the plan covered every link found by then).
PLAN_JOIN = """
    LEFT JOIN (SELECT url, plan_rank, level FROM plan WHERE planned) AS planned_urls USING (url)
    LEFT JOIN (SELECT url, true AS new_seed FROM (SELECT {seed_url} AS url FROM read_parquet($seeds))
               ANTI JOIN plan USING (url)) AS new_seeds
      USING (url)"""
PLAN_VIEW_SQL = "CREATE VIEW plan AS SELECT * FROM plan_as_made"
PLAN_UPGRADED_SQL = """
CREATE VIEW plan AS
SELECT {url} AS url, bool_or(planned) AS planned, min(plan_rank) FILTER (WHERE planned) AS plan_rank,
       min(level) FILTER (WHERE planned) AS level
FROM plan_as_made GROUP BY ALL
"""
PLAN_COLUMNS = ("CASE WHEN planned_urls.plan_rank IS NOT NULL THEN true WHEN new_seeds.new_seed THEN NULL "
                "ELSE false END AS planned, planned_urls.plan_rank, planned_urls.level")
NO_PLAN_COLUMNS = "NULL::BOOLEAN AS planned, NULL::BIGINT AS plan_rank, NULL::INTEGER AS level"

# The validators of each URL's latest answer, so the fetch can be a conditional GET, and
# when it was last captured whole, so a 304 revisit record can point at that capture. A page
# whose latest answer was rendered (crawler/rendering/) is asked for without validators: its
# content is what its scripts load, which a 304 for the HTML shell says nothing of, and the
# browser needs the shell itself to run them.
VALIDATORS_JOIN = """
LEFT JOIN (
    SELECT url,
           CASE WHEN NOT {last_rendered} THEN arg_max(etag, fetched_at) END AS etag,
           CASE WHEN NOT {last_rendered} THEN arg_max(last_modified, fetched_at) END AS last_modified,
           max(fetched_at) FILTER (WHERE status = 200) AS last_captured_at,
           arg_max(payload_digest, fetched_at) FILTER (WHERE status = 200) AS last_payload_digest
    FROM read_parquet($fetch_logs, union_by_name = true)
    WHERE status IN (200, 304) AND url IN (SELECT url FROM fates WHERE left_out IS NULL)  -- (group those only)
    GROUP BY url
) AS latest USING (url)
"""
NO_VALIDATORS = ("NULL::VARCHAR AS etag, NULL::VARCHAR AS last_modified, "
                 "NULL::TIMESTAMPTZ AS last_captured_at, NULL::VARCHAR AS last_payload_digest")


# The first day's budget (no plan holds it): the URLs still in are taken shallowest first and,
# within a depth, each host's first before any host's second, so every seed host gets a turn.
# Each URL's place in that order is its key (depth, host_rank, url); the crawl's budget-th key
# is the cut (found from every shard's first keys: first_day_cut), and the URLs after it are
# left out.
FIRST_DAY_KEYS_SQL = """
CREATE TEMP TABLE IF NOT EXISTS first_day AS
SELECT url, depth, row_number() OVER (PARTITION BY host ORDER BY depth, url) AS host_rank
FROM fates WHERE left_out IS NULL
"""
FIRST_DAY_BUDGET_SQL = """
UPDATE fates SET left_out = $day_budget, url = NULL, host = NULL
FROM (
    SELECT url AS over_budget FROM first_day
    WHERE depth > $depth OR (depth = $depth AND (host_rank > $host_rank OR (host_rank = $host_rank AND url > $url)))
) WHERE fates.url = over_budget
"""

# Known URLs left out of the day's frontier, by reason: decided before the ranking, or by it.
LEFT_OUT_SQL = """
SELECT reason, count(*) AS urls
FROM (SELECT decided AS reason FROM judged UNION ALL SELECT left_out FROM fates)
WHERE reason IS NOT NULL GROUP BY reason ORDER BY reason
"""


def build_frontier(settings: CrawlSettings, inputs: CrawlHistory, plan: pa.Table | Path | None = None) -> FrontierResult:
    """The day's frontier as one Arrow table with a shard column, and its counts.

    plan: the day's plan (url, planned, plan_rank, level): its Parquet file
    (recrawl_plan.plan_path) or a table; None without a plan. The whole crawl as one part
    (frontiers_of_shards)."""
    (frontier,) = frontiers_of_shards(settings, inputs, plan, [None])
    return frontier


def frontiers_of_shards(settings: CrawlSettings, inputs: CrawlHistory | Mapping[str, CrawlHistory],
                        plan: pa.Table | list[Path] | Path | None | Mapping[str, list[Path] | None],
                        shards: list[str | None]) -> list[FrontierResult]:
    """The frontier of each of `shards` (None: every shard at once), each built from its own
    hosts' URLs; the only crawl-wide figure, the first day's cut (no plan), from the shards'
    first keys. Together they are the one-process frontier, row for row.

    inputs and plan: the crawl's, or each shard's (frontier_shard_inputs.split_by_shard: the rows of
    its own hosts' URLs only)."""
    plans = [plan[shard] if isinstance(plan, Mapping) else plan for shard in shards]
    parts = [FrontierPart(settings, inputs[shard] if isinstance(inputs, Mapping) else inputs, own_plan, shard)
             for shard, own_plan in zip(shards, plans)]
    if all(own_plan is None for own_plan in plans):
        cut = first_day_cut([part.first_day_keys(settings.first_day_budget + 1) for part in parts],
                            settings.first_day_budget)
        for part in parts:
            part.cut(cut)
    return [part.result() for part in parts]


def first_day_cut_of_shards(settings: CrawlSettings, inputs: CrawlHistory | Mapping[str, CrawlHistory],
                            shards: list[str]) -> tuple | None:
    """The first day's cut (no plan) of frontiers_of_shards, each shard's part judged in turn
    for its first keys and let go (for shards built in processes of their own: shard_frontier).
    inputs: the crawl's, or each shard's (as frontiers_of_shards takes them)."""
    keys = []
    for shard in shards:
        part = FrontierPart(settings, inputs[shard] if isinstance(inputs, Mapping) else inputs, None, shard)
        keys.append(part.first_day_keys(settings.first_day_budget + 1))
        part.con.close()
    return first_day_cut(keys, settings.first_day_budget)


def shard_frontier(settings: CrawlSettings, inputs: CrawlHistory, plan: pa.Table | Path | None, shard: str,
                   cut: tuple | None) -> FrontierResult:
    """One shard's part of frontiers_of_shards, built alone: `cut`, the crawl's first-day cut
    (first_day_cut_of_shards), applies without a plan."""
    part = FrontierPart(settings, inputs, plan, shard)
    if plan is None:
        part.cut(cut)
    return part.result()


def cut_json(cut: tuple | None, **more) -> bytes:
    """The first day's cut as JSON, for the shards' steps (null: no cut), with `more` beside it."""
    return json.dumps({"first_day_cut": None if cut is None else list(cut), **more}).encode()


def cut_of_json(text: bytes) -> tuple | None:
    cut = json.loads(text)["first_day_cut"]
    return None if cut is None else tuple(cut)


def first_day_cut(keys: list[list[tuple]], budget: int) -> tuple | None:
    """The crawl's budget-th key (depth, host_rank, url) among the shards' first keys (each
    shard's first budget + 1 in order), or None when the crawl holds no more than the budget."""
    if budget <= 0:
        return ()  # every URL after the cut
    merged = sorted(key for part in keys for key in part)
    return merged[budget - 1] if len(merged) > budget else None


class FrontierPart:
    """The frontier of one shard's hosts (or every host's: shard None), judged and ranked in a
    DuckDB connection of its own; result() reads it out."""

    def __init__(self, settings: CrawlSettings, inputs: CrawlHistory, plan: pa.Table | Path | None,
                 shard: str | None):
        self.settings, self.inputs, self.shard = settings, inputs, shard
        # (DuckDB spills beyond its memory rather than take the machine: settings.frontier_memory_mb)
        self.con = con = connect(config={"memory_limit": f"{settings.frontier_memory_mb}MB"})
        register_url_rules(con, settings)
        https = https_hosts(inputs.fetch_logs)
        url_of = upgrade_sql if https else str  # one URL per page across schemes
        if https:
            con.register("https_hosts", pa.table({"host": sorted(https)}))
        if isinstance(plan, pa.Table):
            con.register("plan_as_made", plan.select(["url", "planned", "plan_rank", "level"]))
        elif plan is not None:  # read by DuckDB where it lies, never held whole in memory
            files = ", ".join("'" + str(p).replace("'", "''") + "'" for p in (plan if isinstance(plan, list) else [plan]))
            con.execute(f"CREATE VIEW plan_as_made AS SELECT url, planned, plan_rank, level FROM read_parquet([{files}])")
        if plan is not None:  # (a plan made before a host was known for https may name both forms)
            con.execute(PLAN_VIEW_SQL if not https else PLAN_UPGRADED_SQL.format(url=url_of("url")))
        judged_params = {
            "seeds": str(inputs.seeds),
            "out_of_scope": DropReason.OUT_OF_SCOPE,
            "too_deep": DropReason.DEPTH,
            "not_planned": DropReason.NOT_PLANNED,
        }
        links_part = ""
        if inputs.links:
            judged_params["links"] = [str(p) for p in inputs.links]
            known_links, filter_params = known_links_filter(judged_params["links"], settings)
            judged_params.update(filter_params)
            links_part = LINKS_PART.format(not_dropped=known_links,
                                           target=register_url_folding(con, inputs, url_of("target")))
        candidates = CANDIDATES_CTE.format(links_part=links_part, seed_url=url_of("url"))
        hosts_params = {name: value for name, value in judged_params.items() if name not in (
            "out_of_scope", "too_deep", "not_planned")}
        if shard is not None:
            hosts_params["shard_no"] = shard_index(shard)
        con.execute(DISTINCT_HOSTS_SQL.format(links_hosts=LINKS_HOSTS if inputs.links else ""),
                    {name: value for name, value in hosts_params.items() if name in ("seeds", "links")})
        con.execute(HOSTS_SQL.format(of_shard="" if shard is None else OF_SHARD),
                    {"shard_no": hosts_params["shard_no"]} if shard is not None else None)
        con.execute("DROP TABLE distinct_hosts")
        con.execute(JUDGED_SQL.format(candidates=candidates, running_columns=RUNNING_COLUMNS,
                                      of_shard_hosts="" if shard is None else OF_SHARD_HOSTS,
                                      plan_columns=NO_PLAN_COLUMNS if plan is None else PLAN_COLUMNS,
                                      plan_join="" if plan is None else PLAN_JOIN.format(seed_url=url_of("url"))),
                    judged_params)
        con.execute(FATES_SQL, {
            "max_pages_per_host": settings.max_pages_per_host,
            "max_urls_per_pattern": settings.max_urls_per_pattern,
            "pattern_budget": DropReason.PATTERN_BUDGET,
            "host_budget": DropReason.HOST_BUDGET,
            "not_planned": DropReason.NOT_PLANNED,
        })

    def first_day_keys(self, count: int) -> list[tuple]:
        """The first `count` keys of the first day's order among the part's URLs still in."""
        self.con.execute(FIRST_DAY_KEYS_SQL)
        return self.con.execute("SELECT depth, host_rank, url FROM first_day ORDER BY depth, host_rank, url "
                                "LIMIT $count", {"count": count}).fetchall()

    def cut(self, after: tuple | None) -> None:
        """The URLs after the crawl's first-day cut left out (none for None)."""
        if after is None:
            return
        depth, host_rank, url = after if after else (-1, 0, "")  # (): a budget of 0, every URL out
        self.con.execute(FIRST_DAY_KEYS_SQL)  # (the keys, if first_day_keys did not make them here)
        self.con.execute(FIRST_DAY_BUDGET_SQL, {"day_budget": DropReason.DAY_BUDGET, "depth": depth,
                                                "host_rank": host_rank, "url": url})

    def result(self) -> FrontierResult:
        con, settings, inputs = self.con, self.settings, self.inputs
        left_out = dict(con.execute(LEFT_OUT_SQL).fetchall())
        con.execute("DROP TABLE judged")  # its memory is returned before the frontier is sorted

        frontier_params: dict = {"levels": len(settings.priority_weights)}
        if inputs.fetch_logs:
            frontier_params["fetch_logs"] = [str(p) for p in inputs.fetch_logs]
        frontier = con.sql(FRONTIER_SQL.format(
            validators="latest.etag, latest.last_modified, latest.last_captured_at, latest.last_payload_digest"
            if inputs.fetch_logs else NO_VALIDATORS,
            validators_join=VALIDATORS_JOIN.format(last_rendered=last_rendered(frontier_params["fetch_logs"]))
            if inputs.fetch_logs else "",
        ), params=frontier_params).to_arrow_table()
        found = dict(con.execute(
            "SELECT shard, count(*) FROM fates WHERE left_out IS NULL GROUP BY shard").fetchall())
        shards = settings.shard_keys() if self.shard is None else [self.shard]
        per_shard = {shard: found.pop(shard, 0) for shard in shards}
        assert not found, f"shards outside the settings' {settings.shard_count}: {sorted(found)}"
        hosts = con.execute("SELECT count(DISTINCT host) FROM fates WHERE left_out IS NULL").fetchone()[0]
        counts = FrontierCounts(frontier.num_rows, hosts, per_shard, left_out)
        assert sum(per_shard.values()) == frontier.num_rows
        con.close()
        return FrontierResult(frontier, counts)


def last_rendered(fetch_logs: list[str]) -> str:
    """SQL of "the URL's latest answer was rendered" within VALIDATORS_JOIN's grouping (logs
    written before the render tier have no rendered column: never). Columns are only ever
    added, so the newest log (the greatest date=D path) tells: one footer read, not one a file."""
    if "rendered" not in columns_of([max(fetch_logs)]):
        return "false"
    return "coalesce(arg_max(rendered, fetched_at), false)"


def register_url_rules(con: duckdb.DuckDBPyConnection, settings: CrawlSettings) -> None:
    """The Python rules the frontier SQL calls, each over Arrow batches."""
    traps = TrapDefences(TrapLimits.from_settings(settings), Blocklist.read(settings.blocklist_file))

    def shard(hosts: pa.Array) -> pa.Array:
        return pa.array([shard_of(h, settings.shard_count) for h in hosts.to_pylist()], pa.int32())

    def key(shards: pa.Array) -> pa.Array:
        return pa.array([shard_key(n) for n in shards.to_pylist()], pa.string())

    def scoped(hosts: pa.Array) -> pa.Array:
        return pa.array([in_scope(h, settings) for h in hosts.to_pylist()], pa.bool_())

    def deeper(depths: pa.Array) -> pa.Array:
        return pa.array(too_deep(depths.to_numpy(zero_copy_only=False), settings.max_depth), pa.bool_())

    con.create_function("shard_of", shard, ["VARCHAR"], "INTEGER", type="arrow")
    con.create_function("shard_key", key, ["INTEGER"], "VARCHAR", type="arrow")
    con.create_function("in_scope", scoped, ["VARCHAR"], "BOOLEAN", type="arrow")
    con.create_function("too_deep", deeper, ["INTEGER"], "BOOLEAN", type="arrow")
    # NULL is a real answer ("no trap", "no query"): special null handling.
    con.create_function("url_rules", traps.url_rules, ["VARCHAR", "VARCHAR"],
                        "STRUCT(trap VARCHAR, query_shape VARCHAR)", type="arrow", null_handling="special")
