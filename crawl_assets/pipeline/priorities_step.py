"""recrawl_priorities step: for every known URL, how often to refetch it, when it is next
due, what fetching it is worth, and the plan for one day within the budgets.

Three kinds of URL share the day's budget (settings.daily_fetch_budget):

- refresh: fetched before; its frequency comes from the freshness-optimal allocation
  (refresh_allocation.py) of the budget left after discovery, with each host held to
  min(max_pages_per_host, 86,400 / delay, flagged_host_budget if flagged) fetches a day;
  next due = last visit + 1/f; a sitemap or feed lastmod after the last visit makes it due now;
- discovery: never fetched; settings.discovery_share of the budget (what one kind leaves
  unused goes to the other);
- gone: the last answers were 404 (retried after not_found_retry_days, doubling per repeat,
  at most not_found_max_days) or 410 (after gone_retry_days; 0 = never); a URL tried but
  never answered with content for a lasting reason (robots.txt refusal, a redirect, another
  4xx: NO_CONTENT_CLASSES) comes back on the 404 interval too, not daily as a new URL.

Importance w = host importance x (1 + in-links). Expected gain, in importance-weighted days
of fresh copy: refresh w (1 - e^{-λτ}) (1 - e^{-λI}) / λ (the chance the copy is stale after
τ days, times the fresh time a fetch buys over the next interval I = 1/f); discovery the
same with the host's typical rate and the copy certainly missing; gone that of discovery
times GONE_RETURN_ODDS. Under the age objective the stale chance is replaced by the copy's
expected age. The plan takes due URLs before early ones, by gain, within each host's cap;
its rank cut into len(priority_weights) equal groups gives the front-queue levels.
Everything is ordered with the URL as the last tie-breaker: the same history gives the same plan.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import date as Date, datetime, timezone
from enum import StrEnum

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..crawler.shared_root import connect
from ..crawler.vocabulary import StatusClass
from .change_history import sql_literal
from .change_stats_step import DUCKDB_MEMORY_LIMIT, copy_atomic
from .refresh_allocation import AGE, OBJECTIVES, allocate, freshness
from .url_change_state import UrlState, register_change_stats

SECONDS_A_DAY = 86_400
GONE_RETURN_ODDS = 0.1  # a 404/410 page that answers again is worth a tenth of a new one
DEFAULT_RATE = 1 / 30  # changes a day assumed for a host the crawl has no history of
NOT_FOUND, GONE = 404, 410
# A URL tried but never answered with content, for a reason that lasts (transient failures,
# 5xx and network errors, are retried the next day like any new URL).
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


@dataclass(frozen=True)
class PriorityCounts:
    urls: int
    budget: int
    planned: int
    refresh_planned: int
    discovery_planned: int
    gone_planned: int
    due: int  # due on the plan date (planned or not)
    capped_hosts: int  # hosts held at their daily cap by the allocation
    price: float  # the marginal freshness of one more fetch a day at the optimum
    expected_freshness: float  # Σ w F(λ, f) / Σ w over refresh URLs, if the rates are right


@dataclass(frozen=True)
class Priorities:
    urls: pa.Table | None  # one row per known URL, ordered by URL (None: written to urls_out)
    counts: PriorityCounts
    hosts: pa.Table  # one row per host: host, cap (fetches a day), planned


def recrawl_priorities(change_stats, inlinks: pa.Table | None, hosts: pa.Table | None,
                       known_urls: pa.Table, plan_date: str | Date, settings, urls_out=None) -> Priorities:
    """Priorities for every known URL and the plan of `plan_date` (the day to be fetched).

    change_stats: change_stats' state files (ChangeStats.state, or url_change_state.url_state),
    or ChangeStats.urls as Arrow or the path of a Parquet file of it (url, host,
    change_rate, last_visit_at, last_fetched_at, last_status, last_status_class, gone_streak,
    pending_change). inlinks: (url, inlinks) or None. hosts:
    (host, delay_s, flagged[, importance]) or None (every host: default_delay_s, not flagged,
    importance 1). known_urls: (url, host[, inlinks]), every URL the crawl knows, one row per
    URL; with inlinks None, its `inlinks` column (if any) gives the in-links.
    urls_out: a Parquet file to stream the URL table to (written under a temporary name and
    renamed; Priorities.urls is then None) instead of returning it as Arrow. Either is in URL order."""
    if settings.recrawl_objective not in OBJECTIVES:
        raise ValueError(f"setting recrawl_objective must be one of {OBJECTIVES}, "
                         f"not {settings.recrawl_objective!r}")
    stats_columns = {"url", "host", "change_rate", "last_visit_at", "last_fetched_at", "last_status",
                     "last_status_class", "gone_streak", "pending_change"}
    if isinstance(change_stats, pa.Table):
        _require(change_stats, "change_stats", stats_columns)
    _require(known_urls, "known_urls", {"url", "host"})
    if inlinks is not None:
        _require(inlinks, "inlinks", {"url", "inlinks"})
    if hosts is not None:
        _require(hosts, "hosts", {"host", "delay_s", "flagged"})
    day = Date.fromisoformat(plan_date) if isinstance(plan_date, str) else plan_date
    now = datetime(day.year, day.month, day.day, tzinfo=timezone.utc).timestamp() / SECONDS_A_DAY
    # Without a limit DuckDB may take 80 % of the shared machine's memory for the URL-sized joins.
    con = connect(config={"memory_limit": DUCKDB_MEMORY_LIMIT})
    try:
        _register_stats(con, change_stats, stats_columns)
        _register_known(con, known_urls, inlinks)
        con.register("host_facts", _host_facts(hosts))
        no_content = "(" + ", ".join(f"'{c}'" for c in NO_CONTENT_CLASSES) + ")"
        con.execute(_HOST_RATES_SQL)
        con.execute(_HOST_INDEX_SQL)
        everyone_rate = con.execute("SELECT rate FROM host_rates WHERE everyone").fetchall()
        caps = con.sql(_HOST_CAPS_SQL, params=_cap_params(settings)).to_arrow_table()
        # Only the URL and numbers leave DuckDB, in any order (its joins run on both cores
        # without keeping one); numpy puts them in URL order, far cheaper than DuckDB's sort
        # of the whole wide rows.
        con.execute("SET preserve_insertion_order = false")
        pages = con.sql(_PAGES_SQL.format(no_content=no_content),
                        params=_page_params(everyone_rate[0][0] if everyone_rate else None)).to_arrow_table()
    finally:
        con.close()
    in_url_order = pc.sort_indices(pages["url"]).to_numpy()  # byte order, as DuckDB's ORDER BY
    with ThreadPoolExecutor(1) as pool:  # Arrow gathers the URLs while numpy gathers the numbers
        url = pool.submit(pages["url"].take, in_url_order)
        columns = {}
        for name in pages.column_names:  # each column freed once in URL order
            if name != "url":
                columns[name] = pages[name].to_numpy()[in_url_order]
            pages = pages.drop_columns(name)
        url = url.result()
    _require_one_row_per_url(url)
    planned, allocation_counts = _schedule(columns, caps, now, settings)
    per_host = np.bincount(columns["host_index"], weights=planned["planned"].to_numpy(zero_copy_only=False),
                           minlength=len(caps))
    counts = _counts(columns["kind_code"], planned, settings, allocation_counts)
    kinds = pa.array([k.value for k in KIND_CODES])
    table = pa.table({"url": url, "host": caps["host"].take(columns["host_index"]),
                      "kind": kinds.take(columns["kind_code"]), "change_rate": columns["change_rate"],
                      "importance": columns["importance"], **planned})
    del columns, planned
    if urls_out is None:
        urls = table
    else:
        urls = None
        _write(table, urls_out)
    hosts = caps.select(["host", "cap"]).append_column("planned", pa.array(per_host.astype(np.int64)))
    return Priorities(urls=urls, counts=counts, hosts=hosts)


def _write(table: pa.Table, path) -> None:
    """The URL table to Parquet with DuckDB's writer (in the table's order)."""
    con = connect(config={"memory_limit": DUCKDB_MEMORY_LIMIT})
    try:
        con.register("priorities", table)
        copy_atomic(con, "SELECT * FROM priorities", path)
    finally:
        con.close()


def _register_stats(con, change_stats, columns: set[str]) -> None:
    """View change_stats over change_stats' state files (url_change_state.UrlState), an Arrow
    table or a Parquet file (the columns used, and the URL's hashes k1, k2: read from the
    state, which keeps them, or computed)."""
    names = ", ".join(sorted(columns))
    if isinstance(change_stats, UrlState):  # change_stats' state files: the view computes the rates
        register_change_stats(con, change_stats, "change_stats_urls")
        con.execute(f"CREATE VIEW change_stats AS SELECT k1, k2, {names} FROM change_stats_urls")
        return
    if isinstance(change_stats, pa.Table):
        con.register("change_stats_table", change_stats.select(sorted(columns)))
        con.execute(f"CREATE VIEW change_stats AS SELECT hash(url) AS k1, hash(url, 1) AS k2, {names} "
                    "FROM change_stats_table")
        return
    source = f"read_parquet({sql_literal(str(change_stats))})"
    try:
        keys = "k1, k2" if {"k1", "k2"} <= {r[0] for r in con.execute(f"DESCRIBE SELECT * FROM {source}").fetchall()} \
            else "hash(url) AS k1, hash(url, 1) AS k2"
        con.execute(f"CREATE VIEW change_stats AS SELECT {keys}, {names} FROM {source}")
    except duckdb.Error as exc:
        raise ValueError(f"change_stats file {str(change_stats)!r} cannot be read as change_stats' URL table "
                         f"(materialise change_stats first): {exc}") from None


def _register_known(con, known_urls: pa.Table, inlinks: pa.Table | None) -> None:
    """View known_urls (url, host, inlinks): the known URLs with their in-links, from the
    separate inlinks table (summed per URL) or else known_urls' own column (0 without one)."""
    if inlinks is None:
        own = known_urls["inlinks"] if "inlinks" in known_urls.column_names else pa.nulls(len(known_urls), pa.int64())
        con.register("known_urls", pa.table({"url": known_urls["url"], "host": known_urls["host"], "inlinks": own}))
        return
    con.register("known_urls_only", known_urls.select(["url", "host"]))
    con.register("inlinks", inlinks.select(["url", "inlinks"]))
    con.execute("CREATE VIEW known_urls AS SELECT k.url, k.host, l.inlinks FROM known_urls_only k "
                "LEFT JOIN (SELECT url, sum(inlinks) AS inlinks FROM inlinks GROUP BY url) l USING (url)")


def _require_one_row_per_url(urls: pa.ChunkedArray) -> None:
    """The known URLs must be distinct: a URL twice would be planned twice (the rows are in
    URL order, so a repeat sits next to itself)."""
    if len(urls) > 1 and pc.any(pc.equal(urls[1:], urls[:-1])).as_py():
        repeated = pc.filter(urls[1:], pc.equal(urls[1:], urls[:-1]))[0].as_py()
        raise ValueError(f"known_urls lists {repeated!r} more than once: pass one row per URL "
                         "(recrawl_inputs.known_urls groups them)")


def _require(table: pa.Table, name: str, columns: set[str]) -> None:
    missing = columns - set(table.column_names)
    if missing:
        raise ValueError(f"{name} table lacks columns {sorted(missing)}: pass the output of the "
                         f"step that produces it (see recrawl_priorities' docstring)")


def _host_facts(hosts: pa.Table | None) -> pa.Table:
    if hosts is None:
        return pa.table({"host": pa.array([], pa.string()), "delay_s": pa.array([], pa.float64()),
                         "flagged": pa.array([], pa.bool_()), "importance": pa.array([], pa.float64())})
    if "importance" not in hosts.column_names:
        hosts = hosts.append_column("importance", pa.array(np.ones(len(hosts))))
    return hosts.select(["host", "delay_s", "flagged", "importance"])


def _page_params(everyone_rate: float | None) -> dict:
    return {"default_rate": DEFAULT_RATE, "everyone_rate": everyone_rate, "not_found": NOT_FOUND, "gone": GONE,
            **{f"code_{kind.value}": KIND_CODES.index(kind) for kind in Kind}}


def _cap_params(settings) -> dict:
    return {"default_delay": settings.default_delay_s, "host_budget": settings.max_pages_per_host,
            "flagged_budget": settings.flagged_host_budget, "day_seconds": SECONDS_A_DAY}


# The typical change rate (the median) of each host's URLs and of every URL, in one pass over
# change_stats: a URL never fetched takes its host's, or everyone's if its host has none.
_HOST_RATES_SQL = """
CREATE TEMP TABLE host_rates AS
SELECT host, grouping(host) = 1 AS everyone, median(change_rate) AS rate
FROM change_stats GROUP BY GROUPING SETS ((host), ())
"""

# Hosts numbered for the allocation (in host order), once, with what the pages take from
# their host: its typical change rate and its importance.
_HOST_INDEX_SQL = """
CREATE TEMP TABLE host_index AS
SELECT host, row_number() OVER (ORDER BY host) - 1 AS host_index, r.rate AS host_rate,
       coalesce(f.importance, 1.0) AS host_importance
FROM (SELECT DISTINCT host FROM known_urls UNION SELECT DISTINCT host FROM change_stats) h
LEFT JOIN (SELECT host, rate FROM host_rates WHERE NOT everyone) r USING (host)
LEFT JOIN host_facts f USING (host)
"""

# Every known URL with what the crawl knows of it, one row per URL (in no order: numpy sorts
# the rows by URL, the plan's last tie-breaker; the frontier, too, takes a host's URLs of one
# shape in URL order): change_stats' URLs and the known URLs in one full join, on the URL's
# two 64-bit hashes (a collision needs 2^64 URLs), which compare far faster than the strings.
# A known URL without statistics is new (discovery); the in-links come with the known URLs.
_PAGES_SQL = """
WITH known AS (
    SELECT hash(url) AS k1, hash(url, 1) AS k2, url, host, inlinks FROM known_urls
),
everything AS (
    SELECT coalesce(c.url, k.url) AS url, coalesce(c.host, k.host) AS host, c.change_rate,
           CASE WHEN c.k1 IS NULL THEN $code_discovery
                WHEN c.last_status IN ($not_found, $gone) AND c.gone_streak > 0 THEN $code_gone
                WHEN c.last_visit_at IS NULL AND c.last_status_class IN {no_content} THEN $code_gone
                WHEN c.last_visit_at IS NULL THEN $code_discovery ELSE $code_refresh END AS kind_code,
           epoch(c.last_visit_at) / 86400.0 AS last_visit_t, epoch(c.last_fetched_at) / 86400.0 AS last_fetch_t,
           c.last_status, c.gone_streak, c.pending_change, k.inlinks
    FROM change_stats c FULL OUTER JOIN known k ON c.k1 = k.k1 AND c.k2 = k.k2
)
SELECT e.url, x.host_index, e.kind_code,
       coalesce(e.change_rate, x.host_rate, $everyone_rate, $default_rate) AS change_rate,
       x.host_importance * (1 + coalesce(e.inlinks, 0)) AS importance,
       coalesce(e.last_visit_t, 'NaN'::DOUBLE) AS last_visit_t,
       coalesce(e.last_fetch_t, 'NaN'::DOUBLE) AS last_fetch_t,
       coalesce(e.last_status, 0) AS last_status, coalesce(e.gone_streak, 0) AS gone_streak,
       coalesce(e.pending_change, false) AS pending_change
FROM everything e
JOIN host_index x ON x.host IS NOT DISTINCT FROM e.host
"""

# Each host's daily cap: its budget, politeness (86,400 / delay), and the flagged budget.
_HOST_CAPS_SQL = """
SELECT h.host_index, host,
       least($host_budget,
             floor($day_seconds / greatest(coalesce(f.delay_s, $default_delay), 1e-3)),
             CASE WHEN coalesce(f.flagged, false) THEN $flagged_budget ELSE $host_budget END)::BIGINT AS cap
FROM host_index h
LEFT JOIN host_facts f USING (host)
ORDER BY host_index
"""


def _schedule(pages: dict, caps: pa.Table, now: float, settings):
    """Frequencies, next-due dates and gains, per URL (numpy over the columns of the pages
    table, in its order); returns the output columns, in that order, and the allocation's figures."""
    # (copy=False: the columns are 10M long; most already have the type)
    rate = pages["change_rate"].astype(np.float64, copy=False)
    weight = pages["importance"].astype(np.float64, copy=False)
    host = pages["host_index"].astype(np.int64, copy=False)
    last_visit, last_fetch = pages["last_visit_t"], pages["last_fetch_t"]  # NaN: never
    streak = pages["gone_streak"].astype(np.int64, copy=False)
    status = pages["last_status"]
    pending = pages["pending_change"].astype(bool, copy=False)
    cap = caps["cap"].to_numpy(zero_copy_only=False).astype(np.float64)
    assert len(cap) == 0 or host.max() < len(cap)
    kind = pages["kind_code"]
    refresh, discovery, gone = (kind == KIND_CODES.index(k) for k in (Kind.REFRESH, Kind.DISCOVERY, Kind.GONE))

    budget = settings.daily_fetch_budget
    discovery_budget = min(round(settings.discovery_share * budget), int(discovery.sum()))
    refresh_budget = budget - discovery_budget
    idx = np.flatnonzero(refresh)
    allocation = allocate(rate[idx], weight[idx], host[idx], cap, refresh_budget,
                          objective=settings.recrawl_objective)
    frequency = np.zeros(len(rate))
    frequency[idx] = allocation.frequency

    # When each URL is next due (days since the epoch; NaN: not scheduled).
    with np.errstate(divide="ignore", invalid="ignore"):
        due_t = np.where(refresh & (frequency > 0), last_visit + 1 / frequency, np.nan)
    due_t = np.where(refresh & pending, now, due_t)
    due_t = np.where(discovery, now, due_t)
    not_found_wait = np.minimum(settings.not_found_retry_days * 2.0 ** np.maximum(streak - 1, 0),
                                settings.not_found_max_days)
    gone_wait = np.where(status == GONE,
                         settings.gone_retry_days if settings.gone_retry_days > 0 else np.nan,
                         not_found_wait)
    due_t = np.where(gone, last_fetch + gone_wait, due_t)
    del not_found_wait, gone_wait  # (10M-long temporaries: freed as soon as they are used)

    # Expected gain of fetching on the plan date.
    mean_interval = len(idx) / refresh_budget if refresh_budget > 0 else 1.0
    interval = np.where(frequency > 0, 1 / np.where(frequency > 0, frequency, 1), 1.0)
    interval = np.where(refresh, interval, max(mean_interval, 1.0))
    elapsed = np.where(np.isnan(last_visit), 0.0, np.maximum(now - last_visit, 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        fresh_days = np.where(rate > 0, -np.expm1(-rate * interval) / rate, interval)
        if settings.recrawl_objective == AGE:
            stale = np.where(rate > 0, elapsed + np.expm1(-rate * elapsed) / rate, 0.0)  # E[age] now
            stale = np.where(pending, np.maximum(stale, 1.0), stale)
        else:
            stale = np.where(pending, 1.0, -np.expm1(-rate * elapsed))  # P(changed since)
    gain = weight * fresh_days * np.where(refresh, stale, np.where(gone, GONE_RETURN_ODDS, 1.0))
    del interval, elapsed, fresh_days, stale

    today = np.floor(now)
    due_day = np.maximum(np.floor(due_t), today)  # overdue URLs are due today
    due = due_day <= today  # NaN (never due) compares False
    del due_t
    gain = np.nan_to_num(gain)
    # Candidates: due URLs, and refresh URLs the allocation wants (fetched early if budget is left).
    # The plan reads only the head of their order: sort a head long enough for the budget, and
    # a longer one if a pass of the plan ran out of rows before its limit.
    candidate = due | (refresh & (frequency > 0))
    head = 2 * settings.daily_fetch_budget + 1024
    while True:
        order, complete = _plan_order(due, gain, candidate, head)
        planned, short = _plan(order, discovery, host, cap, settings)
        if complete or not short:
            break
        head *= 4
    plan_rank = np.zeros(len(rate), dtype=np.int64)
    plan_order = order[planned[order]]
    plan_rank[plan_order] = np.arange(1, len(plan_order) + 1)
    levels = len(settings.priority_weights)
    level = np.where(planned, 1 + (plan_rank - 1) * levels // max(len(plan_order), 1), levels)
    epoch_day = np.datetime64("1970-01-01", "D")
    columns = {"frequency": pa.array(frequency),
               "next_due": pa.array(epoch_day + np.nan_to_num(due_day).astype("timedelta64[D]"),
                                    mask=np.isnan(due_day)),
               "expected_gain": pa.array(gain), "due": pa.array(due), "planned": pa.array(planned),
               "plan_rank": pa.array(plan_rank, mask=~planned), "level": pa.array(level.astype(np.int32))}
    expected = float((weight[idx] * freshness(rate[idx], allocation.frequency)).sum()
                     / max(weight[idx].sum(), 1e-300)) if len(idx) else 1.0
    return columns, (len(allocation.capped_hosts), allocation.price, expected)


def _plan_order(due, gain, candidate, head: int) -> tuple[np.ndarray, bool]:
    """The first `head` (or a few more) candidate rows in plan order: due first, then by
    expected gain, then by row (= URL order); and whether that is every candidate."""
    rows = np.flatnonzero(candidate)
    ordered = []
    # Due rows, then the others; each part sorted by gain with a stable sort (so by row among
    # equal gains), after keeping only the rows that can be in the head.
    for part in (rows[due[rows]], rows[~due[rows]]):
        if head <= 0:
            break
        if head < len(part):
            part = _highest_gain(part, gain, head)
        ordered.append(part[np.argsort(-gain[part], kind="stable")])
        head -= len(part)
    order = np.concatenate(ordered) if ordered else rows
    return order, len(order) == len(rows)


def _highest_gain(rows, gain, n: int) -> np.ndarray:
    """The rows (in their order) with the n highest gains, and every row tied with the n-th:
    the head of the stable order by gain is then the same as the whole order's."""
    key = -gain[rows]
    return rows[key <= np.partition(key, n - 1)[n - 1]]


def _plan(order, is_discovery, host, cap, settings) -> tuple[np.ndarray, bool]:
    """The day's plan, taken along `order`: first the discovery share, then refresh and gone
    URLs, then discovery again if refresh left budget; never more than a host's cap. And
    whether a pass ran out of rows before its limit (rows after `order` could have been taken)."""
    budget = settings.daily_fetch_budget
    planned = np.zeros(len(is_discovery), dtype=bool)
    used = np.zeros(len(cap), dtype=np.int64)
    discovery = is_discovery[order]
    share = round(settings.discovery_share * budget)
    short = False
    for rows, limit in ((order[discovery], share), (order[~discovery], None), (order[discovery], None)):
        left = budget - int(planned.sum())
        limit = left if limit is None else min(limit, left)
        rows = rows[~planned[rows]]
        taken = _take_within_caps(rows, host, cap, used, limit)
        short |= len(taken) < limit
        planned[taken] = True
        used += np.bincount(host[taken], minlength=len(cap))
    assert planned.sum() <= budget and (used <= cap).all()
    return planned, short


def _take_within_caps(rows, host, cap, used, limit) -> np.ndarray:
    """The first `limit` of `rows` (in their order) whose host has room left."""
    if limit <= 0 or len(rows) == 0:
        return rows[:0]
    # A row's room depends only on the rows before it: look at a prefix, longer if it falls short.
    prefix = min(len(rows), 2 * limit + 1024)
    while True:
        taken = _within_caps(rows[:prefix], host, cap, used)
        if len(taken) >= limit or prefix == len(rows):
            return taken[:limit]
        prefix = min(len(rows), 4 * prefix)


def _within_caps(rows, host, cap, used) -> np.ndarray:
    """The rows (in their order) whose host has room left after the rows before them."""
    hosts = host[rows]
    by_host = np.argsort(hosts, kind="stable")  # keeps the plan order within each host
    sorted_hosts = hosts[by_host]
    first = np.flatnonzero(np.r_[True, sorted_hosts[1:] != sorted_hosts[:-1]])
    rank = np.empty(len(rows), dtype=np.int64)
    rank[by_host] = np.arange(len(rows)) - np.repeat(first, np.diff(np.r_[first, len(rows)]))
    room = rank < cap[hosts] - used[hosts]
    return rows[room]


def _counts(kind_code: np.ndarray, scheduled: dict, settings, allocation_counts) -> PriorityCounts:
    capped_hosts, price, expected = allocation_counts
    planned = scheduled["planned"].to_numpy(zero_copy_only=False)
    per_kind = {k: int((planned & (kind_code == KIND_CODES.index(k))).sum()) for k in Kind}
    assert planned.sum() <= settings.daily_fetch_budget
    return PriorityCounts(urls=len(planned), budget=settings.daily_fetch_budget, planned=int(planned.sum()),
                          refresh_planned=per_kind[Kind.REFRESH], discovery_planned=per_kind[Kind.DISCOVERY],
                          gone_planned=per_kind[Kind.GONE],
                          due=int(scheduled["due"].to_numpy(zero_copy_only=False).sum()),
                          capped_hosts=capped_hosts, price=price, expected_freshness=expected)
