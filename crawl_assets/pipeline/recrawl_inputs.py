"""What change_stats[D] and recrawl_priorities[D] read of the crawl so far, each by one named
loader. recrawl_priorities[D] is computed when day D closes and plans day D + 1
(pipeline/priorities/recrawl_plan.py says how that day reads it).

Hosts are flagged here, once, for the priorities step's small budget: a trap host (the trap
defences refused at least settings.trap_min_refused of its URLs, and at least
settings.trap_refused_ratio of them for each of its fetched pages) or a near-duplicate-heavy one
(the fetch step's demotion rule over the day's host_quality).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

import pyarrow as pa

from ..crawler.batches.batch import in_scope
from ..crawler.crawl_errors import CrawlInputError
from ..crawler.settings import CrawlSettings
from ..crawler.url_policy.depth_limit import too_deep
from ..crawler.url_policy.sharding import shard_index, shard_of
from ..crawler.vocabulary import DropReason, StatusClass
from ..storage.layout import columns_of, host_changes_file, host_dup_ratio_file, shard_files
from ..storage.shared_root import connect, query_connection, read_table
from .change_stats.change_evidence import weigh_listings
from .change_stats.change_stats_step import URL_PATTERN_SQL
from .change_stats.url_change_state import UrlState, has_url_state, url_state
from .crawl_history import CrawlHistory, history_through, known_links_filter, register_url_folding
from .fetch_step import demoted_hosts
from .priorities.host_delays import observed_delays
from .priorities.priorities_step import PartInputs
from .priorities.recrawl_plan import previous_day

# Refusals that say a host generates URLs without end (calendars, facets, session paths).
TRAP_REASONS = frozenset({DropReason.URL_TOO_LONG, DropReason.TOO_MANY_QUERY_PARAMS,
                          DropReason.REPEATED_PATH_SEGMENTS, DropReason.PATTERN_BUDGET,
                          DropReason.HOST_GROWTH_CAPPED})


class HostFlag(StrEnum):
    """Why a host gets settings.flagged_host_budget (recrawl_priorities host_budgets.flag)."""

    TRAP = "trap"
    NEAR_DUPLICATES = "near_duplicates"


def change_stats_inputs(root: Path, date: str) -> tuple[Path, ...]:
    """The fetch logs of every day up to and including `date`."""
    files = shard_files(root, "fetch_log", through=date)
    if not files:
        raise CrawlInputError(f"no fetch log up to {date} under {root / 'fetch_log'}: "
                                f"materialise fetch_log for {date} first")
    return files


@dataclass(frozen=True)
class ChangeStatsSources:
    """What change_stats[D] reads: day D's fetch logs and change_stats[D-1]'s state (the
    daily step), or, without a day before, every fetch log up to D (the full rebuild)."""

    fetch_logs: tuple[Path, ...]
    previous: UrlState | None


def change_stats_sources(root: Path, date: str) -> ChangeStatsSources:
    day_files = tuple(p for p in change_stats_inputs(root, date) if p.parent.parent.name == f"date={date}")
    # A day before without state files (none, or written by an older version) means a rebuild;
    # a day without fetches has nothing to fold. A broken chain of state files is an error
    # (url_state names the file).
    if day_files and has_url_state(root, previous_day(date)):
        return ChangeStatsSources(day_files, url_state(root, previous_day(date)))
    return ChangeStatsSources(change_stats_inputs(root, date), None)


def url_changes_path(root: Path, date: str) -> UrlState:
    """change_stats[D]'s state files (the priorities step reads them with DuckDB, not into memory)."""
    if not has_url_state(root, date):
        raise CrawlInputError(f"{root / 'change_stats' / f'date={date}'} holds no change_stats state: "
                              f"materialise change_stats for {date} first")
    return url_state(root, date)


# Every URL the crawl knows (seeds, and link targets: crawl_history.known_links_filter) with the
# number of distinct other pages linking to it and its depth (the shallowest it was found at).
KNOWN_URLS_SQL = """
WITH found AS (
    SELECT url, host, NULL::VARCHAR AS source, 0 AS depth FROM read_parquet($seeds)
    {links_part}
)
SELECT url, any_value(host) AS host, count(DISTINCT source) FILTER (source <> url) AS inlinks,
       min(depth) AS depth
FROM found GROUP BY url
"""
LINKS_PART = """
    UNION ALL
    SELECT {target}, target_host, source, depth FROM read_parquet($links, union_by_name = true) {not_dropped}
"""


# What a never-fetched URL leads to: the new URLs (unknown to the crawl until then, and not
# refused) that the first fetch of each page of its pool (its URL pattern within its host, as
# change_stats pools rates) showed, on average, counting one more first fetch that showed none
# (one page is weak evidence). A pagination chain's next page or a section's index leads to
# pages the crawl cannot know before it is fetched; an article page leads to few. A page that
# was never the source of a link (no link, or never fetched) has its pool's figure; one that was
# has 0 (it is fetched: what its next fetch shows is no longer the first fetch's). Links files
# written before the seen filter (no is_new, nor dropped_reason: they came together) show none.
LEADS_SQL = """
WITH fetches AS (
    SELECT source AS url, date, count(*) FILTER (WHERE is_new AND dropped_reason IS NULL) AS new_links
    FROM read_parquet($links, hive_partitioning = true, union_by_name = true) GROUP BY source, date
),
firsts AS (SELECT url, arg_min(new_links, date) AS new_links FROM fetches GROUP BY url),
pools AS (
    SELECT host, {url_pattern} AS url_pattern, sum(new_links) / (count(*) + 1) AS leads
    FROM known JOIN firsts USING (url) GROUP BY ALL
),
unfetched AS (SELECT url, host, {url_pattern} AS url_pattern FROM known ANTI JOIN firsts USING (url))
SELECT url, leads FROM unfetched JOIN pools USING (host, url_pattern)
"""


def known_urls(history: CrawlHistory, settings: CrawlSettings, shard: str | None = None) -> pa.Table:
    """(url, host, inlinks, leads) of every known URL the fetch batch would take: on a host in scope,
    and not deeper than max_depth (the plan spends no budget on a URL the batch refuses); a
    link's target folded by the URL aliases learnt (its in-links counted for the URL it folds to);
    leads: the new URLs its first fetch is expected to show (LEADS_SQL; 0 without links).
    shard: only the URLs of that shard's hosts (their in-links counted from every shard's links)."""
    params: dict = {"seeds": str(history.seeds)}
    links_part = ""
    con = connect()  # (a connection of its own: the aliases' fold is a Python function on it)
    try:
        if history.links:
            params["links"] = [str(p) for p in history.links]
            known_links, filter_params = known_links_filter(params["links"], settings)
            params.update(filter_params)
            links_part = LINKS_PART.format(not_dropped=known_links, target=register_url_folding(con, history))
        found = con.sql(KNOWN_URLS_SQL.format(links_part=links_part), params=params).to_arrow_table()
        shallow = ~too_deep(found["depth"].to_numpy(), settings.max_depth)
        con.register("found", found.filter(pa.array(shallow)).drop_columns(["depth"]))
        # Scope (and shard) are Python rules: asked once per distinct host.
        hosts = [h for (h,) in con.sql("SELECT DISTINCT host FROM found").fetchall()]
        con.register("scoped", pa.table({"host": pa.array([h for h in of_shard(hosts, settings, shard)
                                                           if in_scope(h, settings)], pa.string())}))
        con.execute("CREATE TEMP TABLE known AS SELECT * FROM found SEMI JOIN scoped USING (host)")
        leads, leads_params = "SELECT NULL::VARCHAR AS url, NULL::DOUBLE AS leads LIMIT 0", None
        if history.links and "is_new" in columns_of(params["links"]):
            leads, leads_params = LEADS_SQL.format(url_pattern=URL_PATTERN_SQL), {"links": params["links"]}
        return con.sql(f"SELECT k.*, coalesce(l.leads, 0.0) AS leads FROM known k LEFT JOIN ({leads}) l USING (url) "
                       "ORDER BY url", params=leads_params).to_arrow_table()
    finally:
        con.close()


# Hosts whose URLs the trap defences refused, through the day, against their fetched pages.
TRAP_HOSTS_SQL = """
WITH refused AS (
    SELECT host, sum(urls) AS refused FROM read_parquet($dropped, union_by_name = true)
    WHERE reason IN $reasons GROUP BY host
),
pages AS (
    SELECT host, count(DISTINCT url) AS pages FROM read_parquet($fetch_logs, union_by_name = true)
    WHERE status_class = $ok GROUP BY host
)
SELECT host FROM refused LEFT JOIN pages USING (host)
WHERE refused >= $min_refused AND refused >= $per_page * coalesce(pages, 0)
ORDER BY host
"""


def trap_hosts(root: Path, date: str, settings: CrawlSettings) -> frozenset[str]:
    dropped = shard_files(root, "dropped_urls", through=date)
    fetch_logs = shard_files(root, "fetch_log", through=date)
    if not dropped or not fetch_logs:
        return frozenset()
    rows = query_connection().execute(TRAP_HOSTS_SQL, {
        "dropped": [str(p) for p in dropped], "fetch_logs": [str(p) for p in fetch_logs],
        "reasons": sorted(TRAP_REASONS), "ok": StatusClass.OK, "min_refused": settings.trap_min_refused,
        "per_page": settings.trap_refused_ratio,
    }).fetchall()
    return frozenset(host for (host,) in rows)


# Host importance: 1 + ln(1 + how many other hosts link to it), over every link no trap
# defence refused. A host the rest of the web points at matters more than one only its own
# pages link to (a site's navigation says nothing of its standing); the logarithm keeps a
# portal linked from thousands of hosts from taking the whole budget.
HOST_IMPORTANCE_SQL = """
SELECT target_host AS host, 1 + ln(1 + count(DISTINCT source_host)) AS importance
FROM (SELECT target_host, lower(regexp_extract(source, '^[A-Za-z][A-Za-z0-9+.-]*://([^/:?#]+)', 1)) AS source_host
      FROM read_parquet($links, union_by_name = true) {not_dropped})
WHERE source_host <> target_host
GROUP BY target_host ORDER BY host
"""


def host_importance(history: CrawlHistory) -> pa.Table:
    """(host, importance) of every host another host links to; the others count 1."""
    if not history.links:
        return pa.table({"host": pa.array([], pa.string()), "importance": pa.array([], pa.float64())})
    links = [str(p) for p in history.links]
    not_dropped = "WHERE dropped_reason IS NULL" if "dropped_reason" in columns_of(links) else ""
    return query_connection().sql(HOST_IMPORTANCE_SQL.format(not_dropped=not_dropped),
                                  params={"links": links}).to_arrow_table()


def host_facts(root: Path, date: str, settings: CrawlSettings, hosts: list[str],
               importance: pa.Table | None = None) -> pa.Table:
    """(host, delay_s, flagged, flag, importance[, median_rate]) for the priorities step: each
    host's politeness delay, whether it gets the small budget and why, its importance
    (host_importance; 1 for a host not in `importance`) and, once change_stats[date] has written
    its host table, the median change rate of its URLs (null for a host without history)."""
    quality = host_dup_ratio_file(root, date)
    near_dups = demoted_hosts(read_table(quality), settings) if quality.exists() else frozenset()
    traps = trap_hosts(root, date, settings)
    flags = [HostFlag.TRAP.value if h in traps else HostFlag.NEAR_DUPLICATES.value if h in near_dups else None
             for h in hosts]
    weights = {} if importance is None else dict(zip(importance["host"].to_pylist(),
                                                     importance["importance"].to_pylist()))
    delays = observed_delays(root, date, settings)  # what robots.txt and slow answers asked for
    facts = pa.table({"host": pa.array(hosts, pa.string()),
                      "delay_s": pa.array([delays.get(h, settings.default_delay_s) for h in hosts], pa.float64()),
                      "flagged": pa.array([f is not None for f in flags], pa.bool_()),
                      "flag": pa.array(flags, pa.string()),
                      "importance": pa.array([weights.get(h, 1.0) for h in hosts], pa.float64())})
    changes = host_changes_file(root, date)
    if not changes.exists():
        return facts
    medians = read_table(changes, columns=["host", "median_rate"])
    con = query_connection()
    con.register("facts", facts)
    con.register("medians", medians)
    return con.sql("SELECT f.*, m.median_rate FROM facts f LEFT JOIN medians m USING (host) "
                   "ORDER BY f.host").to_arrow_table()


def of_shard(hosts: list[str], settings: CrawlSettings, shard: str | None) -> list[str]:
    """The hosts of `shard` (all of them for None), in their order."""
    if shard is None:
        return hosts
    number = shard_index(shard)
    return [h for h in hosts if shard_of(h, settings.shard_count) == number]


@dataclass(frozen=True)
class PrioritiesInputs:
    change_stats: UrlState  # change_stats[D]'s state files
    known_urls: pa.Table  # url, host, inlinks
    hosts: pa.Table  # host, delay_s, flagged, flag, importance
    shard: str | None = None  # the shard whose hosts these are (None: every host)

    def part(self) -> PartInputs:
        """The inputs as one part of the crawl (priorities_step.priorities_of_parts)."""
        return PartInputs(self.change_stats, None, self.hosts, self.known_urls,
                          None if self.shard is None else self.hosts["host"])


def priorities_inputs(root: Path, date: str, settings: CrawlSettings, shard: str | None = None) -> PrioritiesInputs:
    """What recrawl_priorities[D] reads: of every host, or of one shard's hosts (a host's
    importance still counts links from every shard)."""
    history = history_through(root, date)
    urls = weigh_listings(known_urls(history, settings, shard), root, date)  # sitemaps and feeds: by what they date
    stats = url_changes_path(root, date)
    # Every URL's (pattern, host) has a row in the day's priors: its hosts are the URLs' hosts.
    stats_hosts = query_connection().execute("SELECT DISTINCT host FROM read_parquet($p)",
                                             {"p": str(stats.priors)}).fetchall()
    hosts = of_shard(sorted(set(urls.column("host").to_pylist()) | {host for (host,) in stats_hosts}), settings, shard)
    return PrioritiesInputs(stats, urls, host_facts(root, date, settings, hosts, host_importance(history)), shard)


def host_budgets(facts: pa.Table, plan_hosts: pa.Table) -> pa.Table:
    """Each host's daily cap and planned fetches (Priorities.hosts) with its flag, if any."""
    con = query_connection()
    con.register("facts", facts)
    con.register("plan_hosts", plan_hosts)
    return con.sql("SELECT p.host, p.cap, p.planned, f.flag FROM plan_hosts p LEFT JOIN facts f USING (host) "
                   "ORDER BY p.host").to_arrow_table()
