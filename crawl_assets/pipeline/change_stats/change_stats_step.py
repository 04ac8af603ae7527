"""change_stats step: how often each URL changes, estimated from the fetch logs up to day D.

change_history.py turns the fetch log into per-URL counts: day D's fetches folded into the
per-URL state of change_stats[D-1] (the daily step), or every fetch so far folded into nothing
(the full rebuild; both give the same table). numpy runs the estimators of
change_rate_estimators.py on the URLs fetched that day (the others keep their rate);
pool_sums.py updates the sums per URL pattern and host with those URLs for the priors and the
host table; one pass over every URL's rate gives the host medians, quantiles and bands. What
counts:

- a visit is an answer with content or a 304 (status classes ok and not_modified); errors,
  redirects and refusals are not visits (but a trailing run of 404/410 is counted, the
  priorities step backs off on it);
- a visit changed, under settings.change_definition "archive" (the default), when the payload
  differs from the previous full answer's less the values that change on every fetch by
  design (change_digest: crawler/content/volatile_parts.py says how that is decided); under
  "content", when that payload differs AND the SimHash of the main text moved more than
  settings.near_dup_threshold bits (a template, footer or counter edit is not a change). A
  rendered page (crawler/rendering/) is compared by its rendered DOM: its shell may be the
  same payload every day while what its scripts load changes.
  Either way boilerplate_changes counts the visits whose bytes moved but not their text: a
  reported class, a part of `changes` under "archive", outside it under "content";
  a 304 is unchanged; a sitemap or feed lastmod inside the interval is a change;
- Last-Modified is used only on hosts whose own history shows it is honest (it moves exactly
  when the content changes and is never later than the fetch); elsewhere the estimate rests
  on changed/unchanged visits alone;
- a first sighting is not a change: the first visit's Last-Modified (or a sitemap or feed date
  before it) says when the page last changed, not how often (on a site put online or
  redeployed that morning it is that morning for every page). A URL's evidence starts at its
  first visit, so a URL visited once has none: its rate is its pool's prior (URL pattern
  within host), and the `on_prior` column says so. On a host whose Last-Modified is trusted
  the days that first Last-Modified says the page had been unchanged are survival evidence
  for that URL alone, never a change: the prior discounted, never above it, counted on with
  its unchanged revisits until it is seen changing, and nothing added to the pool
  (url_change_state.UNCHANGED_SINCE_LM_SQL).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date as Date, datetime, time, timedelta, timezone
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...storage.layout import (host_events_file, pattern_priors_file, pool_sums_file, url_state_base_file,
                               url_state_delta_file, write_parquet_atomic)
from ...storage.shared_root import connect, read_table, write_file_atomic
from .change_history import empty_state, every_url_state, fold_history, sql_literal
from .change_rate_estimators import RateEstimator, bias_reduced_rate, irregular_mle_rate
from .host_events import update_host_events
from .pool_sums import pool_priors, update_pool_sums
from .url_change_state import (PRIOR_COLUMNS, STORED_COLUMNS, UrlState, needs_compaction, pooled_published_sql,
                               published_sql, register_latest_state)

# Intervals count as regular (bias-reduced estimator) when the longest is within this share
# of the mean of the shortest; daily batches fetch a URL at varying hours.
REGULAR_SPREAD = 0.1
# DuckDB spills the url-sorted history to disk beyond this rather than take the machine.
DUCKDB_MEMORY_LIMIT = "2GB"


@dataclass(frozen=True)
class ChangeCounts:
    urls: int
    visits: int
    changes: int
    boilerplate_changes: int  # payload moved, SimHash within the threshold: not counted
    not_modified: int
    not_modified_share: float  # 304s among visits
    bytes_saved: int  # the size of the last full answer, for every 304
    lm_trusted_hosts: int
    rate_p10: float  # estimated changes a day, over URLs
    rate_p50: float
    rate_p90: float
    rate_p99: float
    # URLs whose rate is still their pool's prior (visited once: no interval of their own), and
    # their share: how much of what the plan believes is borrowed (priorities explore them).
    on_prior: int = 0
    on_prior_share: float = 0.0
    # The day itself (visits stamped on day D): the 304 share and what conditional GET saved.
    day_visits: int = 0
    day_not_modified: int = 0
    day_not_modified_share: float = 0.0
    day_bytes_saved: int = 0


@dataclass(frozen=True)
class ChangeStats:
    urls: pa.Table | None  # one row per URL ever fetched (None: written as state files under state_root)
    hosts: pa.Table  # one row per host
    counts: ChangeCounts
    rate_bands: pa.Table  # the distribution of estimated rates: band, changes_a_day_below, urls, share
    state: UrlState | None = None  # the files written (url_change_state.register_change_stats reads them)
    host_events: pa.Table | None = None  # host_events.HOST_EVENTS_SCHEMA: pages of a host changing together


# Bands of the estimated rate (changes a day) for the distribution a data team reads.
RATE_BANDS = ((1 / 365, "under once a year"), (1 / 30, "yearly to monthly"), (1 / 7, "monthly to weekly"),
              (1.0, "weekly to daily"), (4.0, "daily to 4 a day"), (float("inf"), "over 4 a day"))


def rate_bands(rates: np.ndarray, urls: int) -> pa.Table:
    """URLs per band of estimated change rate (`rates`: the known rates of `urls` URLs; the
    others count as 0), slowest band first, every band listed."""
    uppers = np.array([upper for upper, _ in RATE_BANDS])
    counts = np.bincount(np.searchsorted(uppers, rates, side="right"), minlength=len(uppers))[:len(uppers)]
    counts[0] += urls - len(rates)
    return pa.table({"band": [name for _, name in RATE_BANDS],
                     "changes_a_day_below": pa.array(uppers, pa.float64(), mask=np.isinf(uppers)),
                     "urls": pa.array(counts, pa.int64()),
                     "share": pa.array(np.round(counts / max(urls, 1), 4), pa.float64())})


def change_stats(fetch_log_glob: str | list[str], date: str | Date, settings,
                 lastmod_evidence: pa.Table | None = None, previous: UrlState | None = None,
                 state_root=None) -> ChangeStats:
    """Per-URL and per-host change statistics from every fetch before the end of `date`.

    fetch_log_glob: Parquet files of the fetch log (hive `date=D/shard=S/*.parquet` or any
    list). settings: anything with `near_dup_threshold` and `change_definition` (CrawlSettings). lastmod_evidence:
    optional (url, lastmod) rows from sitemaps and feeds.
    previous: change_stats[D-1]'s state (url_change_state.url_state) or None. With it, this is
    the daily step: only the fetches of day `date` are read (pass that day's files) and folded
    into the day before's per-URL state; without it, the full rebuild from every fetch up to
    `date`. Both give the same statistics (change_history.py says why).
    state_root: the data root to write day `date`'s state files under (url_change_state.py:
    a delta, or a base for a rebuild or a compaction, and the day's priors; each under a
    temporary name, then renamed; ChangeStats.urls is then None and ChangeStats.state names
    them); None returns the URL table as Arrow instead."""
    end_day = end_of(date)
    start_day = end_day - 1 if previous is not None else float("-inf")
    # The day before's state is streamed from its files, never copied into a table; only the
    # URLs the day changes become tables, and only the numbers the estimators need leave DuckDB.
    con = connect(config={"memory_limit": DUCKDB_MEMORY_LIMIT, "preserve_insertion_order": False})
    try:
        if previous is None:
            empty_state(con)
        else:
            register_latest_state(con, previous, "state_before")
        fold_history(con, fetch_log_glob, start_day, end_day, settings.near_dup_threshold, lastmod_evidence,
                     settings.change_definition)
        _own_estimates(con)
        events = update_host_events(con, _host_events_before(previous), end_day - 1, _rates_before(con, previous))
        every_url_state(con, lastmod_evidence is not None)
        # The pools' and hosts' sums: the day before's updated with the URLs the day changed.
        update_pool_sums(con, previous.sums if previous is not None else None, previous is not None)
        pool_priors(con)
        if state_root is None:
            urls, state = con.sql(published_sql("state_rows", "priors") + " ORDER BY url").to_arrow_table(), None
        else:
            urls, state = None, _write_state(con, state_root, date, previous, events)
        rates = _url_rates(con)
        con.register("host_rates", rates.per_host)
        hosts = con.sql(_HOSTS_SQL).to_arrow_table()
        counts = _counts(con, rates.quantiles, rates.on_prior)
        bands = rate_bands(rates.sorted_by_host, counts.urls)
    finally:
        con.close()
    return ChangeStats(urls=urls, hosts=hosts, counts=counts, rate_bands=bands, state=state, host_events=events)


def _rates_before(con, previous: UrlState | None) -> str | None:
    """The query of the day before's rates of the day's URLs (temp table carry, their state
    before the day, with the day before's priors), None for a full rebuild."""
    if previous is None or previous.priors is None:
        return None
    priors = f"(SELECT {', '.join(PRIOR_COLUMNS)} FROM read_parquet({sql_literal(str(previous.priors))}))"
    return published_sql("carry", priors)


def _host_events_before(previous: UrlState | None) -> pa.Table | None:
    """The day before's host events (None: a rebuild, or a day before them)."""
    if previous is None or previous.host_events is None:
        return None
    return read_table(previous.host_events)


def _write_state(con, root, date: str | Date, previous: UrlState | None, events: pa.Table) -> UrlState:
    """Day D's state files: a delta of the changed URLs over the day before's chain, or a base
    of every URL (a rebuild, or the chain grown past url_change_state's compaction rule)."""
    day = date if isinstance(date, str) else date.isoformat()
    stored = ", ".join(STORED_COLUMNS)
    changed_rows = con.execute("SELECT count(*) FROM changed").fetchone()[0]
    if previous is None or needs_compaction(previous, changed_rows):
        copy_atomic(con, f"SELECT {stored} FROM state_rows", url_state_base_file(root, day))
        state = UrlState(url_state_base_file(root, day))
    else:
        copy_atomic(con, f"SELECT {stored} FROM changed", url_state_delta_file(root, day))
        state = UrlState(previous.base, (*previous.deltas, url_state_delta_file(root, day)))
    copy_atomic(con, "SELECT * FROM priors", pattern_priors_file(root, day))
    copy_atomic(con, "SELECT * FROM pool_sums", pool_sums_file(root, day))
    write_parquet_atomic(events, host_events_file(root, day))
    return UrlState(state.base, state.deltas, pattern_priors_file(root, day), pool_sums_file(root, day),
                    host_events_file(root, day))


def end_of(date: str | Date) -> float:
    """The end of day `date` (UTC) in days since the epoch, the unit of every time below."""
    day = Date.fromisoformat(date) if isinstance(date, str) else date
    end = datetime.combine(day + timedelta(days=1), time(), tzinfo=timezone.utc)
    return end.timestamp() / 86400


def copy_atomic(con, query: str, path, params: dict | None = None) -> None:
    """COPY the query to Parquet (DuckDB streams it) under a temporary name, then into place:
    readers never see half a file (shared_root.write_file_atomic: a rename, or an upload)."""
    path = Path(path) if isinstance(path, str) else path
    write_file_atomic(path, lambda tmp: con.execute(f"COPY ({query}) TO {sql_literal(str(tmp))} (FORMAT parquet)",
                                                    params))


# Estimator codes of _own_estimates, named in SQL by their place in this tuple.
_ESTIMATOR_CODES = (RateEstimator.PRIOR, RateEstimator.BIAS_REDUCED, RateEstimator.MLE)


def _own_estimates(con) -> None:
    """Temp table touched: window_state with each URL's own rate from its intervals,
    bias-reduced when regular, MLE when not (numpy over the numeric columns). Only the URLs
    fetched in the window are estimated: the others' intervals did not change."""
    columns = con.execute("SELECT rowid AS row_id, intervals, changes, visit_days, unchanged_days, "
                          "coalesce(shortest_interval, 0) AS shortest, coalesce(longest_interval, 0) AS longest "
                          "FROM window_state").fetchnumpy()
    n, x = columns["intervals"], columns["changes"]
    observed, unchanged = columns["visit_days"], columns["unchanged_days"]
    shortest, longest = columns["shortest"], columns["longest"]
    with np.errstate(divide="ignore", invalid="ignore"):
        mean_interval = np.where(n > 0, observed / np.maximum(n, 1), 0.0)
    regular = (n > 0) & (longest - shortest <= REGULAR_SPREAD * mean_interval)
    rate = bias_reduced_rate(n, x, mean_interval)
    code = np.where(n > 0, 1, 0).astype(np.int8)
    # Irregular intervals with both changed and unchanged time: the MLE has a finite root.
    mle = (n > 0) & ~regular & (x > 0) & (unchanged > 0)
    idx = np.flatnonzero(mle)
    if len(idx):
        con.register("mle_rows", pa.table({"pos": np.arange(len(idx)), "row_id": columns["row_id"][idx]}))
        lists = con.sql("SELECT p.changed_intervals FROM mle_rows m JOIN window_state p ON p.rowid = m.row_id "
                        "ORDER BY m.pos").to_arrow_table()["changed_intervals"].combine_chunks()
        con.unregister("mle_rows")
        owner = pc.list_parent_indices(lists).to_numpy(zero_copy_only=False)
        values = pc.list_flatten(lists).to_numpy(zero_copy_only=False)
        rate[idx] = irregular_mle_rate(values, owner, unchanged[idx])
    code[(n > 0) & ~regular & ((x == 0) | (unchanged > 0))] = 2
    rate[x == 0] = 0.0  # never seen changing: both estimators say 0; the prior lifts it
    con.register("own", pa.table({"row_id": columns["row_id"], "own_rate": rate, "code": code}))
    del columns
    names = "[" + ", ".join(f"'{e.value}'" for e in _ESTIMATOR_CODES) + "]"
    # (a URL's pattern is computed once, on its first day, and kept in the state)
    con.execute("CREATE TEMP TABLE touched AS SELECT p.* REPLACE (o.own_rate AS interval_rate, "
                f"{names}[o.code + 1] AS interval_estimator, coalesce(p.url_pattern, {URL_PATTERN_SQL}) AS url_pattern) "
                "FROM window_state p JOIN own o ON p.rowid = o.row_id")
    con.unregister("own")
    con.execute("DROP TABLE window_state")


# URL pattern for pooling: host and path with digit runs folded and query values dropped,
# so /news/2031/04/17/a.html and /news/2031/05/02/b.html share a pool.
URL_PATTERN_SQL = ("regexp_replace(regexp_replace(regexp_replace(url, '^[a-zA-Z]+://', ''), "
                   "'[0-9]+', '9', 'g'), '=[^&#]*', '=', 'g')")

@dataclass(frozen=True)
class _UrlRates:
    sorted_by_host: np.ndarray  # every known rate, by host number then rate
    per_host: pa.Table  # host_id, mean_rate, median_rate
    quantiles: list[float]  # over every known rate: QUANTILES
    on_prior: int = 0  # URLs whose rate is their pool's prior


QUANTILES = (0.1, 0.5, 0.9, 0.99)


def _url_rates(con) -> _UrlRates:
    """Every URL's rate, computed once (a join of every URL's state with the priors: 10M at
    scale, on the pool key) and sorted by DuckDB by host and rate; each host's mean and
    median and the quantiles over every URL are then read off in numpy (as DuckDB's avg,
    median and quantile_cont compute them, in less time than those aggregates).
    Temp table host_ids numbers the hosts."""
    con.execute("CREATE TEMP TABLE host_ids AS SELECT host, row_number() OVER (ORDER BY host) AS host_id "
                "FROM (SELECT DISTINCT host FROM priors)")
    con.execute("CREATE TEMP TABLE keyed_priors AS SELECT p.*, h.host_id FROM priors p JOIN host_ids h USING (host)")
    rates = pooled_published_sql(con, "state_rows", "keyed_priors", extra=("host_id",))
    got = con.execute(f"SELECT host_id, change_rate, on_prior FROM ({rates}) WHERE change_rate IS NOT NULL "
                      "ORDER BY host_id, change_rate").fetchnumpy()
    on_prior = int(np.asarray(got["on_prior"], dtype=bool).sum())
    host_id, rate = np.asarray(got["host_id"], dtype=np.int64), np.asarray(got["change_rate"], dtype=np.float64)
    starts = np.flatnonzero(np.r_[True, host_id[1:] != host_id[:-1]]) if len(rate) else np.zeros(0, np.int64)
    sizes = np.diff(np.r_[starts, len(rate)])
    per_host = pa.table({"host_id": host_id[starts],
                         "mean_rate": np.add.reduceat(rate, starts) / sizes if len(rate) else np.zeros(0),
                         "median_rate": _interpolated(rate, starts + (sizes - 1) * 0.5)})
    if not len(rate):
        return _UrlRates(rate, per_host, [0.0] * len(QUANTILES))
    at = (len(rate) - 1) * np.array(QUANTILES)
    order_stats = np.unique(np.r_[np.floor(at), np.ceil(at)].astype(np.int64))
    return _UrlRates(rate, per_host, [float(q) for q in _interpolated(np.partition(rate, order_stats), at)], on_prior)


def _interpolated(ordered: np.ndarray, at: np.ndarray) -> np.ndarray:
    """The values at fractional positions of sorted values (lo + (hi - lo) x fraction, as
    DuckDB's quantile_cont interpolates)."""
    lo, hi = np.floor(at).astype(np.int64), np.ceil(at).astype(np.int64)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (at - lo)


# The host table: lm_hosts' sums, and the rates' mean and median from _url_rates.
_HOSTS_SQL = """
SELECT host, h.urls, h.visits, h.changes, h.boilerplate_changes, h.not_modified,
       h.not_modified / nullif(h.visits, 0) AS not_modified_share, h.bytes_saved, h.lm_checks,
       h.lm_agreements / nullif(h.lm_checks, 0) AS lm_agreement, h.lm_trusted, r.mean_rate, r.median_rate
FROM lm_hosts h
JOIN host_ids USING (host)
LEFT JOIN host_rates r USING (host_id)  -- (a host whose URLs have no rate has no row there)
ORDER BY host
"""


def _counts(con, quantiles: list[float], on_prior: int) -> ChangeCounts:
    row = con.execute("""
        SELECT coalesce(sum(urls), 0), coalesce(sum(visits), 0), coalesce(sum(changes), 0),
               coalesce(sum(boilerplate_changes), 0), coalesce(sum(not_modified), 0),
               coalesce(sum(bytes_saved), 0), count(*) FILTER (lm_trusted)
        FROM lm_hosts""").fetchall()[0] + (quantiles,)
    # the day itself: only the URLs fetched that day have day counts
    row += con.execute("SELECT coalesce(sum(day_visits), 0), coalesce(sum(day_not_modified), 0), "
                       "coalesce(sum(day_bytes_saved), 0) FROM touched").fetchall()[0]
    urls, visits, changes, boiler, not_modified, saved, trusted, quantiles, day_visits, day_304, day_saved = row
    q = quantiles or [0.0] * 4
    return ChangeCounts(urls=urls, visits=int(visits), changes=int(changes), boilerplate_changes=int(boiler),
                        not_modified=int(not_modified),
                        not_modified_share=round(not_modified / visits, 4) if visits else 0.0,
                        bytes_saved=int(saved), lm_trusted_hosts=trusted,
                        rate_p10=q[0], rate_p50=q[1], rate_p90=q[2], rate_p99=q[3],
                        on_prior=on_prior, on_prior_share=round(on_prior / urls, 4) if urls else 0.0,
                        day_visits=int(day_visits), day_not_modified=int(day_304),
                        day_not_modified_share=round(day_304 / day_visits, 4) if day_visits else 0.0,
                        day_bytes_saved=int(day_saved))
