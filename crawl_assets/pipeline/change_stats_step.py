"""change_stats step: how often each URL changes, estimated from the fetch logs up to day D.

One DuckDB pass over the fetch-log Parquet (url-sorted windows, then one GROUP BY url) turns
the history into per-URL counts; numpy runs the estimators of change_rate_estimators.py on
them; a second DuckDB pass pools them per URL pattern and host for the prior and the host
table. What counts:

- a visit is an answer with content or a 304 (status classes ok and not_modified); errors,
  redirects and refusals are not visits (but a trailing run of 404/410 is counted, the
  priorities step backs off on it);
- a visit changed when the payload digest differs from the previous full answer's AND the
  SimHash moved more than settings.near_dup_threshold bits (a new date, counter or ad is not
  a change); a 304 is unchanged; a sitemap or feed lastmod inside the interval is a change;
- Last-Modified is used only on hosts whose own history shows it is honest (it moves exactly
  when the content changes and is never later than the fetch); elsewhere the estimate rests
  on changed/unchanged visits alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date as Date, datetime, time, timedelta, timezone
from enum import StrEnum

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..crawler.vocabulary import StatusClass
from .change_rate_estimators import bias_reduced_rate, irregular_mle_rate

# Intervals count as regular (bias-reduced estimator) when the longest is within this share
# of the mean of the shortest; daily batches fetch a URL at varying hours.
REGULAR_SPREAD = 0.1
# Last-Modified is trusted on a host with at least this many comparable visit pairs, of
# which at least this share agree (moved exactly when the content changed, not in the future).
LM_MIN_CHECKS = 5
LM_MIN_AGREEMENT = 0.95
LM_FUTURE_SLACK_DAYS = 60 / 86400  # clocks differ by a minute
# Pooled prior: a pool's rate is shrunk towards its parent (pattern -> host -> all) with this
# many pseudo-days; its strength b (days) comes from the spread of its members' own rates,
# measured on URLs with at least POOL_MIN_INTERVALS intervals, once a pool has POOL_MIN_URLS.
POOL_PSEUDO_DAYS = 30.0
POOL_MIN_INTERVALS = 3
POOL_MIN_URLS = 5
PRIOR_DAYS_MIN, PRIOR_DAYS_MAX, PRIOR_DAYS_DEFAULT = 1.0, 60.0, 7.0
DEFAULT_PRIOR_RATE = 1 / 30  # changes a day, before the crawl has seen any change at all
GONE_STATUSES = (404, 410)
# DuckDB spills the url-sorted history to disk beyond this rather than take the machine.
DUCKDB_MEMORY_LIMIT = "2GB"
HTTP_DATE = "%a, %d %b %Y %H:%M:%S GMT"


class RateEstimator(StrEnum):
    """Which estimator produced a URL's own rate (change_stats.urls.estimator)."""

    PRIOR = "prior"  # no interval yet: the pooled prior alone
    BIAS_REDUCED = "bias_reduced"  # regular intervals (or a change at every visit)
    MLE = "mle"  # irregular intervals
    LAST_MODIFIED = "last_modified"  # honest Last-Modified on this host


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
    # The day itself (visits stamped on day D): the 304 share and what conditional GET saved.
    day_visits: int = 0
    day_not_modified: int = 0
    day_not_modified_share: float = 0.0
    day_bytes_saved: int = 0


@dataclass(frozen=True)
class ChangeStats:
    urls: pa.Table  # one row per URL ever fetched
    hosts: pa.Table  # one row per host
    counts: ChangeCounts
    rate_bands: pa.Table  # the distribution of estimated rates: band, changes_a_day_below, urls, share


# Bands of the estimated rate (changes a day) for the distribution a data team reads.
RATE_BANDS = ((1 / 365, "under once a year"), (1 / 30, "yearly to monthly"), (1 / 7, "monthly to weekly"),
              (1.0, "weekly to daily"), (4.0, "daily to 4 a day"), (float("inf"), "over 4 a day"))


def rate_bands(rates: pa.ChunkedArray) -> pa.Table:
    """URLs per band of estimated change rate, slowest band first, every band listed."""
    values = rates.fill_null(0.0).to_numpy(zero_copy_only=False)
    uppers = np.array([upper for upper, _ in RATE_BANDS])
    counts = np.bincount(np.searchsorted(uppers, values, side="right"), minlength=len(RATE_BANDS))
    counts = counts[:len(RATE_BANDS)]
    return pa.table({"band": [name for _, name in RATE_BANDS],
                     "changes_a_day_below": pa.array(uppers, pa.float64(), mask=np.isinf(uppers)),
                     "urls": pa.array(counts, pa.int64()),
                     "share": pa.array(np.round(counts / max(len(values), 1), 4), pa.float64())})


LASTMOD_EVIDENCE_SCHEMA = pa.schema([("url", pa.string()), ("lastmod", pa.timestamp("us", tz="UTC"))])


def change_stats(fetch_log_glob: str | list[str], date: str | Date, settings,
                 lastmod_evidence: pa.Table | None = None) -> ChangeStats:
    """Per-URL and per-host change statistics from every fetch before the end of `date`.

    fetch_log_glob: Parquet files of the fetch log (hive `date=D/shard=S/*.parquet` or any
    list). settings: anything with `near_dup_threshold` (CrawlSettings). lastmod_evidence:
    optional (url, lastmod) rows from sitemaps and feeds."""
    end_day = _end_of(date)
    # Every per-URL table stays in DuckDB (temp tables, spilled beyond the memory limit);
    # only the numbers the estimators need leave it, and only the result becomes Arrow.
    con = duckdb.connect(config={"memory_limit": DUCKDB_MEMORY_LIMIT, "preserve_insertion_order": True})
    try:
        _per_url_history(con, fetch_log_glob, end_day, settings.near_dup_threshold, lastmod_evidence)
        _own_estimates(con)
        con.execute("CREATE TEMP TABLE urls AS " + _POOLED_SQL.format(pattern=URL_PATTERN_SQL), _pool_params())
        con.execute("DROP TABLE estimated")
        hosts = con.sql(_HOSTS_SQL).to_arrow_table()
        counts = _counts(con)
        urls = con.sql("SELECT * EXCLUDE (lm_trusted, day_visits, day_not_modified, day_bytes_saved) "
                       "FROM urls ORDER BY url").to_arrow_table()
    finally:
        con.close()
    return ChangeStats(urls=urls, hosts=hosts, counts=counts, rate_bands=rate_bands(urls["change_rate"]))


def _end_of(date: str | Date) -> float:
    """The end of day `date` (UTC) in days since the epoch, the unit of every time below."""
    day = Date.fromisoformat(date) if isinstance(date, str) else date
    end = datetime.combine(day + timedelta(days=1), time(), tzinfo=timezone.utc)
    return end.timestamp() / 86400


# A visit's time in days since the epoch. In the crawl's hive layout a fetch made outside
# its partition's day counts at the start of that day: a backfill, or a test replaying days
# in a row, fetches day D's batch later than D, and its visits stand for day D (a nightly
# run's fetched_at lies within its day and is kept).
VISIT_TIME = "epoch(fetched_at) / 86400.0"
VISIT_TIME_IN_DAY = ("CASE WHEN epoch(fetched_at) - epoch(CAST(date AS DATE)) BETWEEN 0 AND 86399.999999 "
                     "THEN epoch(fetched_at) ELSE epoch(CAST(date AS DATE)) END / 86400.0")


def _read_fetch_log(con, glob) -> str:
    """The fetch_log view over the files; returns the SQL of a visit's time."""
    try:
        # A view cannot take parameters: the path(s) go in as quoted SQL literals.
        con.execute(f"CREATE VIEW fetch_log AS SELECT * FROM read_parquet({_sql_literal(glob)}, "
                    "hive_partitioning = true, union_by_name = true)")
        con.execute("SELECT url, host, status, status_class, fetched_at, bytes, sha256, payload_digest, "
                    "simhash, last_modified FROM fetch_log LIMIT 0")
        columns = {row[0] for row in con.execute("DESCRIBE fetch_log").fetchall()}
    except duckdb.Error as exc:
        raise ValueError(f"fetch log {glob!r} cannot be read as the crawl's fetch-log Parquet "
                         f"(run the fetch step first, or check the path): {exc}") from None
    return VISIT_TIME_IN_DAY if "date" in columns else VISIT_TIME


def _sql_literal(glob: str | list[str]) -> str:
    paths = [glob] if isinstance(glob, str) else list(glob)
    quoted = ", ".join("'" + str(p).replace("'", "''") + "'" for p in paths)
    return quoted if isinstance(glob, str) else f"[{quoted}]"


# Each fetch beside the URL's previous visit and previous full answer: one window over
# rows sorted by URL and time; IGNORE NULLS skips the fetches that are not visits (errors) or carry no
# body (304s) so they are compared with what the crawl last saw.
_HISTORY_SQL = """
WITH fetches AS (
    -- Only numbers go through the sort: the URL as two 64-bit hashes (a collision needs
    -- 2^64 URLs), the digest as one (it is only compared with the previous one).
    SELECT hash(url) AS k1, hash(url, 1) AS k2, status, status_class, {visit_time} AS t,
           status_class IN ($ok, $not_modified) AS is_visit,
           CASE WHEN status_class = $ok THEN hash(coalesce(payload_digest, sha256)) END AS digest,
           CASE WHEN status_class = $ok THEN simhash END AS simhash,
           CASE WHEN status_class = $ok THEN bytes END AS body_bytes,
           epoch(try_strptime(last_modified, $http_date)) / 86400.0 AS lm
    FROM fetch_log
    WHERE {visit_time} < $end_day
),
with_evidence AS ({evidence}),
sequenced AS (
    SELECT *,
           row_number() OVER w AS rn,
           lag(CASE WHEN is_visit THEN t END IGNORE NULLS) OVER w AS prev_t,
           lag(CASE WHEN is_visit THEN lm END IGNORE NULLS) OVER w AS prev_lm,
           lag(CASE WHEN is_visit THEN seen END IGNORE NULLS) OVER w AS prev_seen,
           lag(digest IGNORE NULLS) OVER w AS prev_digest,
           lag(simhash IGNORE NULLS) OVER w AS prev_simhash,
           lag(body_bytes IGNORE NULLS) OVER w AS prev_body_bytes
    FROM with_evidence
    WINDOW w AS (PARTITION BY k1, k2 ORDER BY t, status)
),
-- What each visit tells: its interval, whether the text changed, what Last-Modified says.
judged AS (
    SELECT *,
           CASE WHEN is_visit THEN t - prev_t END AS interval_days,
           digest_moved AND NOT text_moved AS boilerplate_only,
           is_visit AND prev_t IS NOT NULL AND (text_moved OR seen > coalesce(prev_seen, 0)) AS changed
    FROM (SELECT *,
                 coalesce(digest <> prev_digest, false) AS digest_moved,
                 coalesce(digest <> prev_digest, false)
                   AND coalesce(bit_count(xor(simhash, prev_simhash)) > $threshold, true) AS text_moved
          FROM sequenced)
)
SELECT k1, k2,
       count(*) FILTER (is_visit) AS visits,
       count(interval_days) AS intervals,
       count(*) FILTER (changed) AS changes,
       count(*) FILTER (boilerplate_only) AS boilerplate_changes,
       count(*) FILTER (status_class = $not_modified) AS not_modified,
       coalesce(sum(interval_days), 0) AS observed_days,
       coalesce(sum(interval_days) FILTER (NOT changed), 0) AS unchanged_days,
       min(interval_days) AS shortest_interval,
       max(interval_days) AS longest_interval,
       list(interval_days) FILTER (changed) AS changed_intervals,
       -- Last-Modified: pairs of visits that both carry one, and whether it told the truth.
       count(*) FILTER (prev_t IS NOT NULL AND lm IS NOT NULL AND prev_lm IS NOT NULL) AS lm_checks,
       count(*) FILTER (prev_t IS NOT NULL AND lm IS NOT NULL AND prev_lm IS NOT NULL
                        AND (lm <> prev_lm) = changed AND lm <= t + $slack) AS lm_agreements,
       -- The Last-Modified estimator: the time since the last change is observed at each
       -- changed visit (and at the first visit); unchanged intervals are wholly unchanged.
       count(*) FILTER (changed AND lm IS NULL) AS lm_missing,
       count(*) FILTER (is_visit AND lm IS NOT NULL AND (changed OR prev_t IS NULL)) AS lm_changes,
       coalesce(sum(CASE WHEN changed THEN least(greatest(t - lm, 0), interval_days)
                         WHEN interval_days IS NOT NULL THEN interval_days
                         WHEN is_visit AND lm IS NOT NULL THEN greatest(t - lm, 0) END), 0) AS lm_days,
       max(t) FILTER (is_visit) AS last_visit_t,
       max(t) AS last_fetch_t,
       arg_max(status, rn) AS last_status,
       arg_max(status_class, rn) AS last_status_class,
       count(*) - coalesce(max(rn) FILTER (status NOT IN {gone}), 0) AS gone_streak,
       coalesce(sum(prev_body_bytes) FILTER (status_class = $not_modified), 0) AS bytes_saved,
       -- the day D itself: what conditional GET saved that day
       count(*) FILTER (is_visit AND t >= $end_day - 1) AS day_visits,
       count(*) FILTER (status_class = $not_modified AND t >= $end_day - 1) AS day_not_modified,
       coalesce(sum(prev_body_bytes) FILTER (status_class = $not_modified AND t >= $end_day - 1), 0)
         AS day_bytes_saved
FROM judged
GROUP BY k1, k2
"""

# The names behind the hashes: one row per URL.
_NAMES_SQL = """
SELECT hash(url) AS k1, hash(url, 1) AS k2, any_value(url) AS url, any_value(host) AS host
FROM fetch_log WHERE {visit_time} < $end_day GROUP BY ALL
"""

_NO_EVIDENCE = "SELECT *, 0 AS seen FROM fetches"
# `seen` = how many lastmod observations of the URL lie at or before the fetch; a visit whose
# count exceeds the previous visit's had a published change inside its interval.
_WITH_EVIDENCE = """
    SELECT f.*, coalesce(e.seen, 0) AS seen
    FROM fetches f ASOF LEFT JOIN (
        SELECT hash(url) AS k1, hash(url, 1) AS k2, epoch(lastmod) / 86400.0 AS lastmod_t,
               row_number() OVER (PARTITION BY url ORDER BY lastmod) AS seen
        FROM lastmod_evidence) e
      ON f.k1 = e.k1 AND f.k2 = e.k2 AND f.t >= e.lastmod_t
"""


def _per_url_history(con, glob, end_day: float, threshold: int, evidence: pa.Table | None) -> None:
    """Temp table per_url: one row per URL, its history in counts (see _HISTORY_SQL)."""
    visit_time = _read_fetch_log(con, glob)
    if evidence is not None:
        missing = {"url", "lastmod"} - set(evidence.column_names)
        if missing:
            raise ValueError(f"lastmod evidence needs columns url and lastmod; missing {sorted(missing)}")
        con.register("lastmod_evidence", evidence.select(["url", "lastmod"]).cast(LASTMOD_EVIDENCE_SCHEMA))
    sql = _HISTORY_SQL.format(evidence=_NO_EVIDENCE if evidence is None else _WITH_EVIDENCE,
                              gone=str(GONE_STATUSES), visit_time=visit_time)
    con.execute("CREATE TEMP TABLE history AS " + sql, {
        "ok": StatusClass.OK, "not_modified": StatusClass.NOT_MODIFIED, "http_date": HTTP_DATE,
        "end_day": end_day, "threshold": threshold, "slack": LM_FUTURE_SLACK_DAYS,
    })
    con.execute("CREATE TEMP TABLE names AS " + _NAMES_SQL.format(visit_time=visit_time), {"end_day": end_day})
    if evidence is not None:
        con.execute("CREATE TEMP TABLE latest_lastmod AS SELECT url, max(epoch(lastmod) / 86400.0) AS lastmod_t "
                    "FROM lastmod_evidence WHERE epoch(lastmod) / 86400.0 < $end GROUP BY url", {"end": end_day})
        pending = ("coalesce(l.lastmod_t > h.last_visit_t, false) AS pending_change FROM history h "
                   "JOIN names n USING (k1, k2) LEFT JOIN latest_lastmod l USING (url)")
    else:
        pending = "false AS pending_change FROM history h JOIN names n USING (k1, k2)"
    con.execute(f"CREATE TEMP TABLE per_url AS SELECT n.url, n.host, h.* EXCLUDE (k1, k2), {pending}")
    con.execute("DROP TABLE history")
    con.execute("DROP TABLE names")


# Estimator codes of _own_estimates, named in SQL by their place in this tuple.
_ESTIMATOR_CODES = (RateEstimator.PRIOR, RateEstimator.BIAS_REDUCED, RateEstimator.MLE)


def _own_estimates(con) -> None:
    """Temp table estimated: per_url with each URL's own rate from its intervals, bias-reduced
    when regular, MLE when not (numpy over the numeric columns; the rest stays in DuckDB)."""
    columns = con.execute("SELECT rowid AS row_id, intervals, changes, observed_days, unchanged_days, "
                          "coalesce(shortest_interval, 0) AS shortest, coalesce(longest_interval, 0) AS longest "
                          "FROM per_url").fetchnumpy()
    n, x = columns["intervals"], columns["changes"]
    observed, unchanged = columns["observed_days"], columns["unchanged_days"]
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
        lists = con.sql("SELECT p.changed_intervals FROM mle_rows m JOIN per_url p ON p.rowid = m.row_id "
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
    con.execute("CREATE TEMP TABLE estimated AS SELECT p.* EXCLUDE (changed_intervals, shortest_interval, "
                f"longest_interval), o.own_rate, {names}[o.code + 1] AS own_estimator "
                "FROM per_url p JOIN own o ON p.rowid = o.row_id")
    con.unregister("own")
    con.execute("DROP TABLE per_url")


# URL pattern for pooling: host and path with digit runs folded and query values dropped,
# so /news/2031/04/17/a.html and /news/2031/05/02/b.html share a pool.
URL_PATTERN_SQL = ("regexp_replace(regexp_replace(regexp_replace(url, '^[a-zA-Z]+://', ''), "
                   "'[0-9]+', '9', 'g'), '=[^&#]*', '=', 'g')")

_POOLED_SQL = """
WITH lm_hosts AS (
    SELECT host, sum(lm_checks) AS lm_checks, sum(lm_agreements) AS lm_agreements,
           sum(lm_checks) >= $lm_min_checks
             AND sum(lm_agreements) >= $lm_min_agreement * sum(lm_checks) AS lm_trusted
    FROM estimated GROUP BY host
),
-- The evidence each URL brings to its pool: effective changes x over observed days t.
evidence AS (
    SELECT e.*, h.lm_trusted,
           {pattern} AS url_pattern,
           h.lm_trusted AND lm_missing = 0 AND lm_changes > 0 AS by_lm,
           CASE WHEN by_lm THEN lm_changes ELSE own_rate * observed_days END AS x,
           CASE WHEN by_lm THEN lm_days ELSE observed_days END AS t,
           CASE WHEN intervals >= $min_intervals AND t > 0 THEN x / t END AS informative_rate
    FROM estimated e JOIN lm_hosts h USING (host)
),
everyone AS (
    SELECT coalesce(sum(x) / nullif(sum(t), 0), $default_rate) AS m,
           count(informative_rate) AS members,
           var_samp(informative_rate) - avg(informative_rate / t) AS spread
    FROM evidence
),
everyone_b AS (
    SELECT m, CASE WHEN members < $min_urls THEN $b_default WHEN spread <= 0 THEN $b_max
                   ELSE least(greatest(m / spread, $b_min), $b_max) END AS b
    FROM everyone
),
host_pool AS (
    SELECT host, (sum(x) + g.m * $k) / (sum(t) + $k) AS m,
           count(informative_rate) AS members,
           var_samp(informative_rate) - avg(informative_rate / t) AS spread, any_value(g.b) AS parent_b
    FROM evidence, everyone_b g GROUP BY host, g.m
),
host_b AS (
    SELECT host, m, CASE WHEN members < $min_urls THEN parent_b WHEN spread <= 0 THEN $b_max
                         ELSE least(greatest(m / spread, $b_min), $b_max) END AS b
    FROM host_pool
),
pattern_pool AS (
    SELECT url_pattern, host, (sum(x) + any_value(h.m) * $k) / (sum(t) + $k) AS m,
           count(informative_rate) AS members,
           var_samp(informative_rate) - avg(informative_rate / t) AS spread, any_value(h.b) AS parent_b
    FROM evidence JOIN host_b h USING (host) GROUP BY url_pattern, host
),
pattern_b AS (
    SELECT url_pattern, host, m AS prior_rate,
           CASE WHEN members < $min_urls THEN parent_b WHEN spread <= 0 THEN $b_max
                ELSE least(greatest(m / spread, $b_min), $b_max) END AS prior_days
    FROM pattern_pool
)
SELECT url, host, url_pattern, visits, intervals, changes, boilerplate_changes, not_modified,
       t AS observed_days,
       CASE WHEN by_lm THEN $lm_name ELSE own_estimator END AS estimator,
       CASE WHEN t > 0 THEN x / t END AS own_rate,
       (x + prior_rate * prior_days) / (t + prior_days) AS change_rate,
       t / (t + prior_days) AS own_share,
       prior_rate, prior_days, lm_trusted, lm_checks, lm_agreements,
       make_timestamptz(CAST(last_visit_t * 86400000000 AS BIGINT)) AS last_visit_at,
       make_timestamptz(CAST(last_fetch_t * 86400000000 AS BIGINT)) AS last_fetched_at,
       last_status, last_status_class, gone_streak, pending_change, bytes_saved,
       day_visits, day_not_modified, day_bytes_saved
FROM evidence JOIN pattern_b USING (url_pattern, host)
"""


def _pool_params() -> dict:
    return {"lm_min_checks": LM_MIN_CHECKS, "lm_min_agreement": LM_MIN_AGREEMENT,
            "min_intervals": POOL_MIN_INTERVALS, "default_rate": DEFAULT_PRIOR_RATE,
            "min_urls": POOL_MIN_URLS, "b_default": PRIOR_DAYS_DEFAULT, "b_min": PRIOR_DAYS_MIN,
            "b_max": PRIOR_DAYS_MAX, "k": POOL_PSEUDO_DAYS, "lm_name": RateEstimator.LAST_MODIFIED}


_HOSTS_SQL = """
SELECT host, count(*) AS urls, sum(visits)::BIGINT AS visits, sum(changes)::BIGINT AS changes,
       sum(boilerplate_changes)::BIGINT AS boilerplate_changes, sum(not_modified)::BIGINT AS not_modified,
       sum(not_modified) / nullif(sum(visits), 0) AS not_modified_share,
       sum(bytes_saved)::BIGINT AS bytes_saved,
       sum(lm_checks)::BIGINT AS lm_checks, sum(lm_agreements) / nullif(sum(lm_checks), 0) AS lm_agreement,
       bool_or(lm_trusted) AS lm_trusted,
       avg(change_rate) AS mean_rate, median(change_rate) AS median_rate
FROM urls GROUP BY host ORDER BY host
"""


def _counts(con) -> ChangeCounts:
    row = con.execute("""
        SELECT count(*), coalesce(sum(visits), 0), coalesce(sum(changes), 0),
               coalesce(sum(boilerplate_changes), 0), coalesce(sum(not_modified), 0),
               coalesce(sum(bytes_saved), 0),
               count(DISTINCT host) FILTER (lm_trusted),
               quantile_cont(change_rate, [0.1, 0.5, 0.9, 0.99]),
               coalesce(sum(day_visits), 0), coalesce(sum(day_not_modified), 0), coalesce(sum(day_bytes_saved), 0)
        FROM urls""").fetchall()[0]
    urls, visits, changes, boiler, not_modified, saved, trusted, quantiles, day_visits, day_304, day_saved = row
    q = quantiles or [0.0] * 4
    return ChangeCounts(urls=urls, visits=int(visits), changes=int(changes), boilerplate_changes=int(boiler),
                        not_modified=int(not_modified),
                        not_modified_share=round(not_modified / visits, 4) if visits else 0.0,
                        bytes_saved=int(saved), lm_trusted_hosts=trusted,
                        rate_p10=q[0], rate_p50=q[1], rate_p90=q[2], rate_p99=q[3],
                        day_visits=int(day_visits), day_not_modified=int(day_304),
                        day_not_modified_share=round(day_304 / day_visits, 4) if day_visits else 0.0,
                        day_bytes_saved=int(day_saved))
