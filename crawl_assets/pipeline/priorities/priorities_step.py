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

from dataclasses import dataclass
from datetime import date as Date, datetime, timezone
from enum import StrEnum

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ...crawler.vocabulary import StatusClass
from ...storage.shared_root import connect, write_file_atomic
from ..change_stats.change_history import sql_literal
from ..change_stats.change_stats_step import DUCKDB_MEMORY_LIMIT
from ..change_stats.url_change_state import UrlState, register_change_stats, register_latest_state
from .refresh_allocation import AGE, OBJECTIVES, allocate, freshness
from .slices import over_slices
from .url_order import UrlOrder, host_numbers, in_url_order

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
    (host, delay_s, flagged[, importance][, median_rate]) or None (every host: default_delay_s,
    not flagged, importance 1); median_rate is the median change rate of the host's URLs
    (change_stats' host table), computed from change_stats when the column is absent.
    known_urls: (url, host[, inlinks]), every URL the crawl knows, one row per URL, best in URL
    order (recrawl_inputs.known_urls gives them so; any other order is sorted first); with
    inlinks None, its `inlinks` column (if any) gives the in-links.
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
    known = in_url_order(known_urls)
    facts = _host_facts(hosts)
    # Without a limit DuckDB may take 80 % of the shared machine's memory for the URL-sized joins.
    con = connect(config={"memory_limit": DUCKDB_MEMORY_LIMIT})
    try:
        _register_stats(con, change_stats, stats_columns)
        host_rates = facts.select(["host", "median_rate"]) if "median_rate" in facts.column_names \
            else con.sql(_HOST_RATES_SQL).to_arrow_table()
        con.register("known_urls", pa.table({"url": known["url"], "pos": np.arange(len(known), dtype=np.int64)}))
        inlink_counts = _inlink_counts(con, known, inlinks)
        # Only numbers leave DuckDB, in any order (its join runs on both cores without
        # keeping one), and the names of the URLs that only change_stats has: the known
        # URLs' names, hosts and URL order come from known_urls itself.
        con.execute("SET preserve_insertion_order = false")
        pages = con.sql(_PAGES_SQL.format(no_content=_NO_CONTENT), params=_page_params()).to_arrow_table()
        extras = _unknown_names(con, pages)
    finally:
        con.close()  # (frees DuckDB's memory before the URL-sized arrays below)
    rows = UrlOrder(known, dict(zip(pages.column_names, pages.columns)), extras)
    del pages
    host_names, host_index = host_numbers(rows.host)
    caps = _host_caps(host_names, facts, settings)
    columns = rows.columns
    columns["host_index"] = host_index
    columns["change_rate"] = _rates_or_typical(columns.pop("own_change_rate"), host_index,
                                               _per_host(host_rates, "median_rate", host_names, np.nan))
    columns["importance"] = _importance(_per_host(facts, "importance", host_names, 1.0), host_index,
                                        rows.known(inlink_counts))
    planned, allocation_counts = _schedule(columns, caps, now, settings)
    per_host = np.bincount(host_index, weights=planned["planned"].to_numpy(zero_copy_only=False),
                           minlength=len(caps))
    counts = _counts(columns["kind_code"], planned, settings, allocation_counts)
    kinds = pa.array([k.value for k in KIND_CODES])
    table = pa.table({"url": rows.url, "host": pa.DictionaryArray.from_arrays(host_index, host_names),
                      "kind": pa.DictionaryArray.from_arrays(columns["kind_code"], kinds),
                      "change_rate": columns["change_rate"], "importance": columns["importance"], **planned})
    del columns, planned, rows
    if urls_out is None:
        urls = table.cast(pa.schema([f.with_type(pa.string()) if pa.types.is_dictionary(f.type) else f
                                     for f in table.schema]))
    else:
        urls = None
        _write(table, urls_out)
    hosts = caps.select(["host", "cap"]).append_column("planned", pa.array(per_host.astype(np.int64)))
    return Priorities(urls=urls, counts=counts, hosts=hosts)


# Columns of few distinct values: dictionary pages (the others would try a dictionary and
# fall back, at about a second's cost at 10M URLs); row groups of 2M rows, written 64K rows
# at a time (at 10M URLs 15 % less time than pyarrow's defaults).
_DICTIONARY_COLUMNS = ["host", "kind", "next_due", "level"]
_ROW_GROUP_ROWS, _WRITE_BATCH_ROWS = 1 << 21, 1 << 16


def _write(table: pa.Table, path) -> None:
    """The URL table to Parquet (in the table's order), under a temporary name then renamed.
    pyarrow's writer on one core costs less than DuckDB's on two here: the host and kind
    columns arrive dictionary-encoded (written as such, no hashing of 10M strings) and are
    read back as plain strings (no Arrow schema stored)."""
    write_file_atomic(path, lambda tmp: pq.write_table(
        table, tmp, store_schema=False, use_dictionary=_DICTIONARY_COLUMNS, row_group_size=_ROW_GROUP_ROWS,
        write_batch_size=_WRITE_BATCH_ROWS))


def _register_stats(con, change_stats, columns: set[str]) -> None:
    """View change_stats over change_stats' state files (url_change_state.UrlState), an Arrow
    table or a Parquet file (the columns used, the URL's hashes k1, k2: read from the state,
    which keeps them, or computed; and the visit times in days since the epoch); view
    change_stats_names (k1, k2, url, host) of its URLs, read from the state without the rates."""
    names = ", ".join(sorted(columns))
    if isinstance(change_stats, UrlState):  # change_stats' state files: the view computes the rates
        register_change_stats(con, change_stats, "change_stats_urls")
        con.execute(f"CREATE VIEW change_stats AS SELECT k1, k2, {names}, last_visit_t, last_fetch_t "
                    "FROM change_stats_urls")
        register_latest_state(con, change_stats, "change_stats_state")
        con.execute("CREATE VIEW change_stats_names AS SELECT k1, k2, url, host FROM change_stats_state")
        return
    times = "epoch(last_visit_at) / 86400.0 AS last_visit_t, epoch(last_fetched_at) / 86400.0 AS last_fetch_t"
    if isinstance(change_stats, pa.Table):
        con.register("change_stats_table", change_stats.select(sorted(columns)))
        con.execute(f"CREATE VIEW change_stats AS SELECT hash(url) AS k1, hash(url, 1) AS k2, {names}, {times} "
                    "FROM change_stats_table")
    else:
        source = f"read_parquet({sql_literal(str(change_stats))})"
        try:
            stored = {r[0] for r in con.execute(f"DESCRIBE SELECT * FROM {source}").fetchall()}
            keys = "k1, k2" if {"k1", "k2"} <= stored else "hash(url) AS k1, hash(url, 1) AS k2"
            con.execute(f"CREATE VIEW change_stats AS SELECT {keys}, {names}, {times} FROM {source}")
        except duckdb.Error as exc:
            raise ValueError(f"change_stats file {str(change_stats)!r} cannot be read as change_stats' URL table "
                             f"(materialise change_stats first): {exc}") from None
    con.execute("CREATE VIEW change_stats_names AS SELECT k1, k2, url, host FROM change_stats")


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


def _per_host(table: pa.Table, column: str, host_names: pa.Array, default: float) -> np.ndarray:
    """table[column] of each host of host_names (its order), `default` for a host not in it or null."""
    found = pc.index_in(host_names, value_set=table["host"].combine_chunks()).to_numpy(zero_copy_only=False)
    values = pc.fill_null(table[column].cast(pa.float64()), default).to_numpy()
    missing = np.isnan(found)
    return np.where(missing, default, values[np.where(missing, 0, found).astype(np.int64)]) if len(values) \
        else np.full(len(host_names), default)


def _rates_or_typical(own: np.ndarray, host_index: np.ndarray, host_median: np.ndarray) -> np.ndarray:
    """Each URL's change rate: its own estimate (change_stats), else its host's median, else
    everyone's (the median over every URL with an estimate), else DEFAULT_RATE."""
    known_rates = own[~np.isnan(own)]
    everyone = _median(known_rates) if len(known_rates) else DEFAULT_RATE
    del known_rates
    typical = np.where(np.isnan(host_median), everyone, host_median)
    rate = np.empty(len(own))

    def fill(part):  # (elementwise, slice by slice on every core)
        np.copyto(rate[part], np.where(np.isnan(own[part]), typical[host_index[part]], own[part]))

    over_slices(len(own), fill)
    return rate


def _importance(host_importance: np.ndarray, host_index: np.ndarray, inlinks: np.ndarray) -> np.ndarray:
    """w = host importance x (1 + in-links), per URL."""
    weight = np.empty(len(host_index))
    over_slices(len(weight), lambda part: np.multiply(host_importance[host_index[part]], 1 + inlinks[part],
                                                      out=weight[part]))
    return weight


def _median(values: np.ndarray) -> float:
    """The median as DuckDB's median() computes it (quantile_cont 0.5: lo + (hi - lo) / 2)."""
    n = len(values)
    lo_at, hi_at = (n - 1) // 2, n // 2
    part = np.partition(values, [lo_at, hi_at])
    lo, hi = part[lo_at], part[hi_at]
    return float(lo + (hi - lo) * 0.5)


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
    return hosts.select([c for c in ("host", "delay_s", "flagged", "importance", "median_rate")
                         if c in hosts.column_names])


def _host_caps(host_names: pa.Array, facts: pa.Table, settings) -> pa.Table:
    """(host_index, host, cap) of every host, in host order: _HOST_CAPS_SQL."""
    con = connect()
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
stats AS (
    -- (its kind as a small code before the join: no string goes through the hash table)
    SELECT k1, k2,
           CASE WHEN last_status IN ($not_found, $gone) AND gone_streak > 0 THEN $code_gone
                WHEN last_visit_t IS NULL AND last_status_class IN {no_content} THEN $code_gone
                WHEN last_visit_t IS NULL THEN $code_discovery ELSE $code_refresh END::TINYINT AS kind_code,
           change_rate, last_visit_t, last_fetch_t, last_status, gone_streak, pending_change
    FROM change_stats
)
SELECT k.pos, CASE WHEN k.pos IS NULL THEN c.k1 END AS k1, CASE WHEN k.pos IS NULL THEN c.k2 END AS k2,
       coalesce(c.kind_code, $code_discovery) AS kind_code,
       coalesce(c.change_rate, 'NaN'::DOUBLE) AS own_change_rate,
       coalesce(c.last_visit_t, 'NaN'::DOUBLE) AS last_visit_t, coalesce(c.last_fetch_t, 'NaN'::DOUBLE) AS last_fetch_t,
       coalesce(c.last_status, 0) AS last_status, coalesce(c.gone_streak, 0) AS gone_streak,
       coalesce(c.pending_change, false) AS pending_change
FROM known k FULL OUTER JOIN stats c ON c.k1 = k.k1 AND c.k2 = k.k2
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
    cap = caps["cap"].to_numpy(zero_copy_only=False).astype(np.float64)
    assert len(cap) == 0 or host.max() < len(cap)
    kind = pages["kind_code"]
    refresh, discovery = (kind == KIND_CODES.index(k) for k in (Kind.REFRESH, Kind.DISCOVERY))

    budget = settings.daily_fetch_budget
    discovery_budget = min(round(settings.discovery_share * budget), int(discovery.sum()))
    refresh_budget = budget - discovery_budget
    idx = np.flatnonzero(refresh)
    allocation = allocate(rate[idx], weight[idx], host[idx], cap, refresh_budget,
                          objective=settings.recrawl_objective)
    frequency = np.zeros(len(rate))
    frequency[idx] = allocation.frequency
    expected = _expected_freshness(rate[idx], weight[idx], allocation.frequency)
    del idx

    # When each URL is next due (day numbers since the epoch, never before today: NaN is
    # never), whether that is today, and the expected gain of fetching it on the plan date.
    due_day, gain, due = np.empty(len(rate)), np.empty(len(rate)), np.empty(len(rate), dtype=bool)
    mean_interval = int(refresh.sum()) / refresh_budget if refresh_budget > 0 else 1.0
    over_slices(len(rate), lambda part: _due_and_gain(part, pages, frequency, refresh, discovery, now,
                                                      max(mean_interval, 1.0), settings, due_day, gain, due))
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
    level = np.full(len(rate), levels, dtype=np.int32)
    level[plan_order] = 1 + np.arange(len(plan_order)) * levels // max(len(plan_order), 1)
    never = np.isnan(due_day)
    columns = {"frequency": pa.array(frequency),
               # (day numbers since the epoch are date32's own values: no datetime64 detour)
               "next_due": pa.array(np.where(never, 0, due_day).astype(np.int32), mask=never).cast(pa.date32()),
               "expected_gain": pa.array(gain), "due": pa.array(due), "planned": pa.array(planned),
               "plan_rank": pa.array(plan_rank, mask=~planned), "level": pa.array(level)}
    return columns, (len(allocation.capped_hosts), allocation.price, expected)


def _due_and_gain(part: slice, pages: dict, frequency, refresh, discovery, now: float, mean_interval: float,
                  settings, due_day, gain, due) -> None:
    """due_day, gain and due of the rows in `part` (elementwise: the same values whatever
    the slicing)."""
    rate, weight = pages["change_rate"][part], pages["importance"][part]
    last_visit, last_fetch = pages["last_visit_t"][part], pages["last_fetch_t"][part]  # NaN: never
    streak, status = pages["gone_streak"][part], pages["last_status"][part]
    pending = pages["pending_change"][part].astype(bool, copy=False)
    f, fresh, new = frequency[part], refresh[part], discovery[part]
    gone = pages["kind_code"][part] == KIND_CODES.index(Kind.GONE)
    with np.errstate(divide="ignore", invalid="ignore"):
        due_t = np.where(fresh & (f > 0), last_visit + 1 / f, np.nan)
    due_t = np.where(fresh & pending, now, due_t)
    due_t = np.where(new, now, due_t)
    not_found_wait = np.minimum(settings.not_found_retry_days * 2.0 ** np.maximum(streak - 1, 0),
                                settings.not_found_max_days)
    gone_wait = np.where(status == GONE, settings.gone_retry_days if settings.gone_retry_days > 0 else np.nan,
                         not_found_wait)
    due_t = np.where(gone, last_fetch + gone_wait, due_t)
    interval = np.where(f > 0, 1 / np.where(f > 0, f, 1), 1.0)
    interval = np.where(fresh, interval, mean_interval)
    elapsed = np.where(np.isnan(last_visit), 0.0, np.maximum(now - last_visit, 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        fresh_days = np.where(rate > 0, -np.expm1(-rate * interval) / rate, interval)
        if settings.recrawl_objective == AGE:
            stale = np.where(rate > 0, elapsed + np.expm1(-rate * elapsed) / rate, 0.0)  # E[age] now
            stale = np.where(pending, np.maximum(stale, 1.0), stale)
        else:
            stale = np.where(pending, 1.0, -np.expm1(-rate * elapsed))  # P(changed since)
    gain[part] = np.nan_to_num(weight * fresh_days * np.where(fresh, stale, np.where(gone, GONE_RETURN_ODDS, 1.0)))
    today = np.floor(now)
    due_day[part] = np.maximum(np.floor(due_t), today)  # overdue URLs are due today
    due[part] = due_day[part] <= today  # NaN (never due) compares False


def _expected_freshness(rate, weight, frequency) -> float:
    """Σ w F(λ, f) / Σ w over the refresh URLs, if the rates are right (summed slice by slice)."""
    if len(rate) == 0:
        return 1.0
    sums = over_slices(len(rate), lambda part: (float((weight[part] * freshness(rate[part], frequency[part])).sum()),
                                                float(weight[part].sum())))
    return sum(s for s, _ in sums) / max(sum(w for _, w in sums), 1e-300)


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
        ordered.append(_by_gain(part, gain))
        head -= len(part)
    order = np.concatenate(ordered) if ordered else rows
    return order, len(order) == len(rows)


def _by_gain(rows, gain) -> np.ndarray:
    """`rows` (increasing) by gain, highest first, equal gains in row order: the order of a
    stable sort, from a quicker unstable one whose runs of equal gains are put in row order."""
    key = -gain[rows]
    order = np.argsort(key)
    sorted_key = key[order]
    same = sorted_key[1:] == sorted_key[:-1]
    if same.any():
        tied = np.flatnonzero(np.r_[same, False] | np.r_[False, same])  # runs of equal gains, contiguous
        tied_rows = order[tied]
        order[tied] = tied_rows[np.lexsort((tied_rows, sorted_key[tied]))]
    return rows[order]


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
    by_host = _stable_order(hosts)  # keeps the plan order within each host
    sorted_hosts = hosts[by_host]
    first = np.flatnonzero(np.r_[True, sorted_hosts[1:] != sorted_hosts[:-1]])
    rank = np.empty(len(rows), dtype=np.int64)
    rank[by_host] = np.arange(len(rows)) - np.repeat(first, np.diff(np.r_[first, len(rows)]))
    room = rank < cap[hosts] - used[hosts]
    return rows[room]


def _stable_order(hosts: np.ndarray) -> np.ndarray:
    """np.argsort(hosts, kind="stable") for host numbers: two passes of numpy's radix sort
    on 16 bits each (four times quicker than the merge sort it takes for 64-bit numbers)."""
    if len(hosts) == 0 or hosts.max() >= 1 << 32 or hosts.min() < 0:
        return np.argsort(hosts, kind="stable")
    low = np.argsort((hosts & 0xFFFF).astype(np.uint16), kind="stable")
    return low[np.argsort((hosts[low] >> 16).astype(np.uint16), kind="stable")]


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
