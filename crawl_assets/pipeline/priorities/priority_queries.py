"""The priorities step's DuckDB queries: change_stats and the known URLs joined into numbers
per page (in no order; url_order.py puts them in URL order), each known URL's in-links, each
host's typical change rate and its daily cap. Only numbers leave DuckDB, and the names of the
URLs that only change_stats has."""

from __future__ import annotations

from enum import StrEnum
from typing import NamedTuple

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...crawler.vocabulary import StatusClass
from ...storage.shared_root import connect, query_connection
from ..change_stats.change_history import sql_literal
from ..change_stats.change_stats_step import DUCKDB_MEMORY_LIMIT, URL_PATTERN_SQL
from ..change_stats.url_change_state import POOL_KEY_SQL, UrlState, register_change_stats, register_latest_state

SECONDS_A_DAY = 86_400
NOT_FOUND, GONE = 404, 410
# A URL tried but never answered with content, for a reason that lasts (transient failures,
# 5xx, network errors and a host's "slow down" (throttled), are retried the next day like any new URL).
NO_CONTENT_CLASSES = (StatusClass.ROBOTS_DISALLOWED, StatusClass.REDIRECT, StatusClass.REDIRECT_LOOP,
                      StatusClass.TOO_MANY_REDIRECTS, StatusClass.HTTP_4XX, StatusClass.TOO_LARGE,
                      StatusClass.BLOCKED_ADDRESS)


class Kind(StrEnum):
    """What a URL's fetch would be for (recrawl_priorities.urls.kind)."""

    REFRESH = "refresh"
    DISCOVERY = "discovery"
    GONE = "gone"


# Kinds as small codes in the schedule (a URL's kind string is made only for the output).
KIND_CODES = (Kind.REFRESH, Kind.DISCOVERY, Kind.GONE)


# What the step reads of change_stats (recrawl_priorities' docstring says what each is), and
# what it reads when there: whether a URL's rate is still its pool's prior, and its pool (the
# exploration of pools: url_schedule.py). A table without them explores nothing.
STATS_COLUMNS = frozenset({"url", "host", "change_rate", "last_visit_at", "last_fetched_at", "last_status",
                           "last_status_class", "gone_streak", "pending_change"})
OPTIONAL_STATS_COLUMNS = {"on_prior": "false", "url_pattern": "NULL::VARCHAR"}


class PageNumbers(NamedTuple):
    pages: pa.Table  # numbers per page (_PAGES_SQL), in no order
    unknown: pa.Table  # (row, url, host) of the pages only change_stats has, by URL
    host_rates: pa.Table  # (host, median_rate)
    inlinks: np.ndarray  # each known URL's in-links, in known_urls' order


def page_numbers(change_stats, known: pa.Table, inlinks: pa.Table | None, facts: pa.Table,
                 only_hosts: pa.Array | None = None) -> PageNumbers:
    """What change_stats and known_urls (in URL order) say of every page, in one DuckDB
    connection: facts is the hosts table (host_facts), whose median_rate column is used when
    it has one. only_hosts: the hosts of one part of the crawl (a shard): change_stats' URLs
    of the others are left out (known_urls holds the part's URLs already)."""
    # Without a limit DuckDB may take 80 % of the machine's memory for the URL-sized joins.
    con = connect(config={"memory_limit": DUCKDB_MEMORY_LIMIT})
    try:
        if only_hosts is not None:
            con.register("part_hosts", pa.table({"host": only_hosts}))
        register_stats(con, change_stats, STATS_COLUMNS,
                       where="" if only_hosts is None else " WHERE host IN (SELECT host FROM part_hosts)")
        with_priors = _register_pool_priors(con, change_stats)
        host_rates = facts.select(["host", "median_rate"]) if "median_rate" in facts.column_names \
            else con.sql(_HOST_RATES_SQL).to_arrow_table()
        con.register("known_urls", pa.table({"url": known["url"], "host": known["host"],
                                             "pos": np.arange(len(known), dtype=np.int64)}))
        inlink_counts = _inlink_counts(con, known, inlinks)
        # Only numbers leave DuckDB, in any order (its join runs on all its threads without
        # keeping one), and the names of the URLs that only change_stats has: the known
        # URLs' names, hosts and URL order come from known_urls itself.
        con.execute("SET preserve_insertion_order = false")
        new_in_pool = _NEW_IN_POOL_SQL.format(url_pattern=URL_PATTERN_SQL) if with_priors else _NO_POOLS_SQL
        pages = con.sql(_PAGES_SQL.format(no_content=_NO_CONTENT, new_in_pool=new_in_pool, pool_key=POOL_KEY_SQL),
                        params=_page_params()).to_arrow_table()
        return PageNumbers(pages, _unknown_names(con, pages), host_rates, inlink_counts)
    finally:
        con.close()  # (frees DuckDB's memory before the URL-sized arrays the step builds next)


def register_stats(con, change_stats, columns: set[str], where: str = "") -> None:
    """View change_stats over change_stats' state files (url_change_state.UrlState), an Arrow
    table or a Parquet file (the columns used, OPTIONAL_STATS_COLUMNS where the source has
    them, else their defaults; the URL's hashes k1, k2: read from the state, which keeps them,
    or computed; and the visit times in days since the epoch); view change_stats_names (k1,
    k2, url, host) of its URLs, read from the state without the rates. where: a condition on
    the rows' host column that both views keep to (" WHERE ...")."""
    names = ", ".join(sorted(columns))

    def optional(present: set[str]) -> str:
        return "".join(f", {c}" if c in present else f", {default} AS {c}"
                       for c, default in OPTIONAL_STATS_COLUMNS.items())

    if isinstance(change_stats, UrlState):  # change_stats' state files: the view computes the rates
        register_change_stats(con, change_stats, "change_stats_urls")
        con.execute(f"CREATE VIEW change_stats AS SELECT k1, k2, {names}{optional(set(OPTIONAL_STATS_COLUMNS))}, "
                    f"last_visit_t, last_fetch_t FROM change_stats_urls{where}")
        register_latest_state(con, change_stats, "change_stats_state")
        con.execute(f"CREATE VIEW change_stats_names AS SELECT k1, k2, url, host FROM change_stats_state{where}")
        _register_host_events(con, change_stats.host_events)
        return
    _register_host_events(con, None)
    times = "epoch(last_visit_at) / 86400.0 AS last_visit_t, epoch(last_fetched_at) / 86400.0 AS last_fetch_t"
    if isinstance(change_stats, pa.Table):
        present = set(change_stats.column_names) & set(OPTIONAL_STATS_COLUMNS)
        con.register("change_stats_table", change_stats.select(sorted(columns | present)))
        con.execute(f"CREATE VIEW change_stats AS SELECT hash(url) AS k1, hash(url, 1) AS k2, {names}"
                    f"{optional(present)}, {times} FROM change_stats_table{where}")
    else:
        source = f"read_parquet({sql_literal(str(change_stats))})"
        try:
            stored = {r[0] for r in con.execute(f"DESCRIBE SELECT * FROM {source}").fetchall()}
            keys = "k1, k2" if {"k1", "k2"} <= stored else "hash(url) AS k1, hash(url, 1) AS k2"
            con.execute(f"CREATE VIEW change_stats AS SELECT {keys}, {names}{optional(stored)}, {times} "
                        f"FROM {source}{where}")
        except duckdb.Error as exc:
            raise ValueError(f"change_stats file {str(change_stats)!r} cannot be read as change_stats' URL table "
                             f"(materialise change_stats first): {exc}") from None
    con.execute("CREATE VIEW change_stats_names AS SELECT k1, k2, url, host FROM change_stats")


def _register_pool_priors(con, change_stats) -> bool:
    """View pool_priors (url_pattern, host, prior_rate): the day's pooled priors of change_stats'
    state files (a URL never fetched takes its pool's); False for any other source (no view)."""
    priors = change_stats.priors if isinstance(change_stats, UrlState) else None
    if priors is None:
        return False
    con.execute("CREATE VIEW pool_priors AS SELECT url_pattern, host, prior_rate "
                f"FROM read_parquet({sql_literal(str(priors))})")
    return True


def _register_host_events(con, path) -> None:
    """View host_events (host, event_after_t, event_before_t, event_share): each host's last
    event (change_stats' host_events.py), empty without one."""
    if path is None:
        con.execute("CREATE VIEW host_events AS SELECT NULL::VARCHAR AS host, NULL::DOUBLE AS event_after_t, "
                    "NULL::DOUBLE AS event_before_t, NULL::DOUBLE AS event_share LIMIT 0")
        return
    con.execute("CREATE VIEW host_events AS SELECT host, epoch(last_event_after) / 86400.0 AS event_after_t, "
                "epoch(last_event_before) / 86400.0 AS event_before_t, last_event_share AS event_share "
                f"FROM read_parquet({sql_literal(str(path))}) WHERE last_event_after IS NOT NULL")


def _inlink_counts(con, known: pa.Table, inlinks: pa.Table | None) -> np.ndarray:
    """Each known URL's in-links (known_urls order): the separate inlinks table summed per
    URL, or else known_urls' own column (0 without one, and for a null)."""
    if inlinks is None:
        if "inlinks" not in known.column_names:
            return np.zeros(len(known))
        return pc.fill_null(known["inlinks"], 0).to_numpy().astype(np.float64, copy=False)
    con.register("inlinks", inlinks.select(["url", "inlinks"]))
    summed = con.sql("SELECT k.pos, sum(l.inlinks) AS inlinks FROM known_urls k JOIN inlinks l USING (url) "
                     "GROUP BY k.pos").fetchnumpy()
    counts = np.zeros(len(known))
    counts[summed["pos"]] = np.nan_to_num(np.asarray(summed["inlinks"], dtype=np.float64))
    return counts


def _unknown_names(con, pages: pa.Table) -> pa.Table:
    """(row, url, host) of the pages whose URL only change_stats has (not known), by URL."""
    rows = np.flatnonzero(pc.is_null(pages["pos"]).to_numpy(zero_copy_only=False))
    if len(rows) == 0:
        return pa.table({"row": pa.array([], pa.int64()), "url": pa.array([], pa.string()),
                         "host": pa.array([], pa.string())})
    con.register("unknown_keys", pa.table({"row": rows, "k1": pages["k1"].take(rows), "k2": pages["k2"].take(rows)}))
    return con.sql("SELECT u.row, n.url, n.host FROM unknown_keys u JOIN change_stats_names n USING (k1, k2) "
                   "ORDER BY n.url").to_arrow_table()


def host_caps(host_names: pa.Array, facts: pa.Table, settings) -> pa.Table:
    """(host_index, host, cap, flagged) of every host, in host order: _HOST_CAPS_SQL."""
    con = query_connection()
    try:
        con.register("host_index", pa.table({"host_index": np.arange(len(host_names)), "host": host_names}))
        con.register("host_facts", facts.select(["host", "delay_s", "flagged"]))
        return con.sql(_HOST_CAPS_SQL, params=_cap_params(settings)).to_arrow_table()
    finally:
        con.close()


def _page_params() -> dict:
    return {"not_found": NOT_FOUND, "gone": GONE, **{f"code_{kind.value}": KIND_CODES.index(kind) for kind in Kind}}


def _cap_params(settings) -> dict:
    return {"default_delay": settings.default_delay_s, "host_budget": settings.max_pages_per_host,
            "flagged_budget": settings.flagged_host_budget, "day_seconds": SECONDS_A_DAY}


# The typical change rate (the median) of each host's URLs, in one pass over change_stats
# (when the hosts table does not bring change_stats' own): a URL never fetched takes its
# host's, or everyone's if its host has none.
_HOST_RATES_SQL = "SELECT host, median(change_rate) AS median_rate FROM change_stats GROUP BY host"

_NO_CONTENT = "(" + ", ".join(f"'{c}'" for c in NO_CONTENT_CLASSES) + ")"

# Every known URL with what the crawl knows of it, one row per URL (in no order: UrlOrder
# puts the rows in URL order, the plan's last tie-breaker; the frontier, too, takes a host's
# URLs of one shape in URL order): change_stats' URLs and the known URLs in one full join, on
# the URL's two 64-bit hashes (a collision needs 2^64 URLs), which compare far faster than
# the strings. A known URL without statistics is new (discovery); `pos` is its row in
# known_urls, and only a URL that change_stats alone has carries its hashes (its name and
# host are then looked up: _unknown_names).
_PAGES_SQL = """
WITH known AS (
    SELECT hash(url) AS k1, hash(url, 1) AS k2, pos FROM known_urls
),
-- a known URL never fetched: its pool's prior rate, where its pool (URL pattern within its
-- host) has one (change_stats' pattern priors); else the step gives it its host's typical rate
new_in_pool AS ({new_in_pool}),
stats AS (
    -- (its kind as a small code before the join: no string goes through the hash table)
    SELECT k1, k2,
           CASE WHEN last_status IN ($not_found, $gone) AND gone_streak > 0 THEN $code_gone
                WHEN last_visit_t IS NULL AND last_status_class IN {no_content} THEN $code_gone
                WHEN last_visit_t IS NULL THEN $code_discovery ELSE $code_refresh END::TINYINT AS kind_code,
           change_rate, last_visit_t, last_fetch_t, last_status, gone_streak, pending_change,
           coalesce(on_prior, false) AS on_prior, coalesce({pool_key}, 0) AS pool_key,
           -- a copy older than its host's last event is stale with the event's share, one
           -- fetched while the event may have been under way with a part of it (host_events.py)
           CASE WHEN last_visit_t < e.event_after_t THEN e.event_share
                WHEN last_visit_t < e.event_before_t
                THEN e.event_share * (e.event_before_t - last_visit_t) / (e.event_before_t - e.event_after_t)
                ELSE 0 END AS event_stale
    FROM change_stats LEFT JOIN host_events e USING (host)
)
SELECT k.pos, CASE WHEN k.pos IS NULL THEN c.k1 END AS k1, CASE WHEN k.pos IS NULL THEN c.k2 END AS k2,
       coalesce(c.kind_code, $code_discovery) AS kind_code,
       coalesce(c.change_rate, d.prior_rate, 'NaN'::DOUBLE) AS own_change_rate,
       coalesce(c.last_visit_t, 'NaN'::DOUBLE) AS last_visit_t, coalesce(c.last_fetch_t, 'NaN'::DOUBLE) AS last_fetch_t,
       coalesce(c.last_status, 0) AS last_status, coalesce(c.gone_streak, 0) AS gone_streak,
       coalesce(c.pending_change, false) AS pending_change, coalesce(c.event_stale, 0.0) AS event_stale,
       coalesce(c.on_prior, false) AS on_prior, coalesce(c.pool_key, 0)::UBIGINT AS pool_key
FROM known k FULL OUTER JOIN stats c ON c.k1 = k.k1 AND c.k2 = k.k2
LEFT JOIN new_in_pool d ON d.pos = k.pos
"""

# (the pool priors of the known URLs without statistics, when there are priors)
_NEW_IN_POOL_SQL = """
    SELECT n.pos, p.prior_rate
    FROM (SELECT pos, host, {url_pattern} AS url_pattern
          FROM (SELECT u.pos, u.host, u.url FROM known_urls u
                ANTI JOIN change_stats c ON c.k1 = hash(u.url) AND c.k2 = hash(u.url, 1))) n
    JOIN pool_priors p USING (url_pattern, host)
"""
_NO_POOLS_SQL = "SELECT NULL::BIGINT AS pos, NULL::DOUBLE AS prior_rate LIMIT 0"

# Each host's daily cap: its budget, politeness (86,400 / delay), and the flagged budget; and
# whether it is flagged (a flagged host's backlog is not put first: day_plan.backlog_order).
_HOST_CAPS_SQL = """
SELECT h.host_index, host,
       least($host_budget,
             floor($day_seconds / greatest(coalesce(f.delay_s, $default_delay), 1e-3)),
             CASE WHEN coalesce(f.flagged, false) THEN $flagged_budget ELSE $host_budget END)::BIGINT AS cap,
       coalesce(f.flagged, false) AS flagged
FROM host_index h
LEFT JOIN host_facts f USING (host)
ORDER BY host_index
"""
