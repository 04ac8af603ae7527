"""change_stats' per-URL state on disk, and every URL's change statistics read from it.

A crawl day fetches a tenth of the URLs it knows or fewer; rewriting every URL's state each
day would cost what every URL costs, not what the day's do. So change_stats[D] keeps:

- a base file: every URL's state (the full rebuild writes one, and so does a compaction);
- or a delta file: only the URLs whose state day D changed (fetched that day, or whose
  pending sitemap or feed change flipped), over the last base and the deltas since; a URL's
  newest row wins (join key: its two hashes k1, k2);
- the day's pooled priors (pattern_priors.parquet: one row per URL pattern within its host,
  with the host's Last-Modified trust), small, and the sums they come from (pool_sums.parquet,
  pool_sums.py), which the next day updates instead of summing every URL again.

A URL's published statistics (change_rate, own_share, estimator, ...) depend on the day's
priors, so they are computed when read: register_change_stats makes the DuckDB view of them
from the newest state and the day's priors, with the same SQL the step uses in memory. A day
writes a base instead of a delta (compaction) once COMPACT_AFTER_DAYS deltas would follow the
base or their rows would pass COMPACT_DELTA_SHARE of the base's: every reader pays for the chain.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date as Date, timedelta

import duckdb
import pyarrow as pa

from ...crawler.crawl_errors import CrawlInputError
from ...storage.layout import (host_events_file, pattern_priors_file, pool_sums_file, url_state_base_file,
                               url_state_delta_file)
from ...storage.shared_root import connect, parquet_file
from .change_history import LATER_STATE_COLUMNS, STATE_COLUMNS, STATE_SQL_TYPES, sql_literal
from .change_rate_estimators import RateEstimator

COMPACT_AFTER_DAYS = 7
COMPACT_DELTA_SHARE = 0.5
# What a state file holds per URL: the fold's state and whether a listed change awaits a visit.
STORED_COLUMNS = STATE_COLUMNS + ("pending_change",)
PRIOR_COLUMNS = ("url_pattern", "host", "prior_rate", "prior_days", "lm_trusted")


@dataclass(frozen=True)
class UrlState:
    """The files of change_stats[D]'s per-URL state, and the day's priors."""

    base: object  # a path (local Path or UPath)
    deltas: tuple = ()  # oldest first; the newest row of a URL wins
    priors: object | None = None
    sums: object | None = None  # the day's pool sums (pool_sums.py); None in a layout before them
    host_events: object | None = None  # the day's host events (host_events.py); None before them

    def files(self) -> tuple:
        return (self.base, *self.deltas)


def has_url_state(root, date: str) -> bool:
    """Whether change_stats[date] wrote a state file (in this layout)."""
    return url_state_base_file(root, date).exists() or url_state_delta_file(root, date).exists()


def url_state(root, date: str) -> UrlState:
    """change_stats[date]'s state: its base, or its delta and the deltas back to the base."""
    deltas, day = [], date
    for _ in range(COMPACT_AFTER_DAYS + 1):
        if url_state_base_file(root, day).exists():
            priors = pattern_priors_file(root, date)
            if not priors.exists():
                raise CrawlInputError(f"{priors} is missing: materialise change_stats for {date} again")
            sums, events = pool_sums_file(root, date), host_events_file(root, date)
            return UrlState(url_state_base_file(root, day), tuple(reversed(deltas)), priors,
                            sums if sums.exists() else None, events if events.exists() else None)
        delta = url_state_delta_file(root, day)
        if not delta.exists():
            raise CrawlInputError(
                f"{delta} is missing: change_stats for {date} needs every day's state file back to the last "
                f"base; materialise change_stats for {day} again (and the days after it, in order)")
        deltas.append(delta)
        day = (Date.fromisoformat(day) - timedelta(days=1)).isoformat()
    raise CrawlInputError(f"no base state within {COMPACT_AFTER_DAYS} days before {date} under "
                          f"{url_state_base_file(root, date).parent.parent}: materialise change_stats for the "
                          f"oldest of those days again with no day before it (a full rebuild)")


def needs_compaction(state: UrlState, day_rows: int) -> bool:
    """Whether day D should write a base: the chain would be too long or too large (row
    counts from the files' footers)."""
    if len(state.deltas) + 1 >= COMPACT_AFTER_DAYS:
        return True
    delta_rows = sum(parquet_file(p).metadata.num_rows for p in state.deltas) + day_rows
    return delta_rows > COMPACT_DELTA_SHARE * parquet_file(state.base).metadata.num_rows


def _check_file(con, path) -> set[str]:
    """A state file that DuckDB cannot read, or that lacks the state, is named in the error;
    returns the LATER_STATE_COLUMNS it lacks (written before them)."""
    try:
        columns = {row[0] for row in con.execute(f"DESCRIBE SELECT * FROM read_parquet({sql_literal(str(path))})")
                   .fetchall()}
    except duckdb.Error as exc:
        raise CrawlInputError(f"change_stats state file {path} cannot be read ({str(exc).splitlines()[0]}): "
                              f"materialise change_stats for its day again") from None
    missing = set(STORED_COLUMNS) - columns - set(LATER_STATE_COLUMNS)
    if missing:
        raise CrawlInputError(f"change_stats state file {path} lacks columns {sorted(missing)}: materialise "
                              f"change_stats for its day again")
    return set(LATER_STATE_COLUMNS) - columns


def latest_state_sql(con, state: UrlState) -> str:
    """The query of every URL's newest stored state (STORED_COLUMNS) over the base and the
    deltas: subqueries, not CTEs, so each reader's projection reaches the Parquet scans and
    nothing is materialised (a URL in several deltas: its keys are grouped first, then its
    newest row joined)."""
    lacking = {str(path): _check_file(con, path) for path in state.files()}
    columns = ", ".join(STORED_COLUMNS)

    def scan(path) -> str:
        listed = ", ".join(f"NULL::{STATE_SQL_TYPES[c]} AS {c}" if c in lacking[str(path)] else c
                           for c in STORED_COLUMNS)
        return f"SELECT {listed} FROM read_parquet({sql_literal(str(path))})"

    if not state.deltas:
        return scan(state.base)
    deltas = " UNION ALL ".join(f"SELECT *, {i} AS delta_rank FROM ({scan(p)})" for i, p in enumerate(state.deltas))
    newest = f"SELECT {columns} FROM ({deltas})"
    if len(state.deltas) > 1:
        newest += (f" JOIN (SELECT k1, k2, max(delta_rank) AS delta_rank FROM ({deltas}) GROUP BY k1, k2) "
                   "USING (k1, k2, delta_rank)")
    return (f"SELECT * FROM ({scan(state.base)}) ANTI JOIN (SELECT k1, k2 FROM ({deltas})) USING (k1, k2) "
            f"UNION ALL {newest}")


def register_latest_state(con, state: UrlState, name: str) -> None:
    """View `name`: every URL's newest stored state (latest_state_sql)."""
    con.execute(f"CREATE VIEW {name} AS {latest_state_sql(con, state)}")


# How a URL's evidence counts on the day: Last-Modified where its host's is trusted, the URL
# has two visits that carried one (a first sighting alone is no evidence: change_history.py)
# and its own never failed it (no change without a date), else the intervals' estimate as
# changes over observed days. A URL visited once has none (t = 0): its rate is the prior.
EVIDENCE_SQL = """{trusted} AND lm_missing = 0 AND lm_checks > 0 AS by_lm,
       CASE WHEN by_lm THEN lm_changes ELSE interval_rate * visit_days END AS x,
       CASE WHEN by_lm THEN lm_days ELSE visit_days END AS t"""

# A URL never seen changing (x = 0) whose host's Last-Modified is trusted: the days from its
# Last-Modified to its last visit are days without a change, its first sighting's age A among
# them. They are survival evidence for that URL alone, never a change: with its pool's prior
# as a Gamma prior of mean prior_rate and prior_days pseudo-days, a URL visited once gets the
# posterior mean prior_rate * prior_days / (prior_days + A), the prior discounted, never
# above it (it stays on_prior: no revisit evidence), and later unchanged visits add their
# days to A (no jump back up when the evidence grows). Once the URL is seen changing, the
# estimators read its visits alone. The first FIRST_SIGHTING_GRACE_DAYS after a Last-Modified
# are not counted: a date from the visit's own day is what a site put online or redeployed
# that morning shows (issue 28), and it leaves the prior exactly. The age is no evidence for
# the pool (pool_sums.py sums EVIDENCE_SQL alone): a page inspected at a random moment is
# length-biased towards its long unchanged spells, so summed without the change that began
# them the ages would drag every prior towards 0.
FIRST_SIGHTING_GRACE_DAYS = 1.0
UNCHANGED_SINCE_LM_SQL = f"""CASE WHEN {{trusted}} AND x = 0
            THEN greatest(t, coalesce(s.last_visit_t - s.last_visit_lm - {FIRST_SIGHTING_GRACE_DAYS!r}, 0))
            ELSE t END AS days"""

# Every URL's published columns, then its state: the shrunk rate (x + a) / (t + b) with the
# prior a = prior_rate * prior_days of its pattern (change_rate_estimators.shrunk_rate), over
# t days, or more for a URL never seen changing (UNCHANGED_SINCE_LM_SQL).
PUBLISHED_SQL = """
SELECT url, host, url_pattern, visits, intervals, changes, boilerplate_changes, not_modified,
       days AS observed_days,
       CASE WHEN by_lm THEN {lm_name} ELSE coalesce(interval_estimator, {prior_name}) END AS estimator,
       CASE WHEN days > 0 THEN x / days END AS own_rate,
       (x + prior_rate * prior_days) / (days + prior_days) AS change_rate,
       days / (days + prior_days) AS own_share,
       coalesce(t, 0) <= 0 AS on_prior,
       prior_rate, prior_days, lm_checks, lm_agreements,
       make_timestamptz(CAST(last_visit_t * 86400000000 AS BIGINT)) AS last_visit_at,
       make_timestamptz(CAST(last_fetch_t * 86400000000 AS BIGINT)) AS last_fetched_at,
       last_status, last_status_class, gone_streak, pending_change, bytes_saved,
       {state}{extra}
FROM (SELECT s.*, p.prior_rate, p.prior_days{prior_extra}, {evidence}, {age}
      FROM {state_rows} s JOIN {priors} p {join})
"""
PUBLISHED_COLUMNS = ("url", "host", "url_pattern", "visits", "intervals", "changes", "boilerplate_changes",
                     "not_modified", "observed_days", "estimator", "own_rate", "change_rate", "own_share",
                     "on_prior", "prior_rate", "prior_days", "lm_checks", "lm_agreements", "last_visit_at",
                     "last_fetched_at", "last_status", "last_status_class", "gone_streak", "pending_change",
                     "bytes_saved")
STATE_ONLY_COLUMNS = tuple(c for c in STATE_COLUMNS if c not in PUBLISHED_COLUMNS)
URL_COLUMNS = PUBLISHED_COLUMNS + STATE_ONLY_COLUMNS


def published_sql(state_rows: str, priors: str, join: str = "USING (url_pattern, host)",
                  extra: tuple = ()) -> str:
    """The query of every URL's change_stats columns (URL_COLUMNS) over a state relation and
    a priors relation (PRIOR_COLUMNS), joined on `join` (aliases s and p), plus the `extra`
    columns of the priors."""
    return PUBLISHED_SQL.format(lm_name=f"'{RateEstimator.LAST_MODIFIED.value}'",
                                prior_name=f"'{RateEstimator.PRIOR.value}'", state=", ".join(STATE_ONLY_COLUMNS),
                                evidence=EVIDENCE_SQL.format(trusted="p.lm_trusted"),
                                age=UNCHANGED_SINCE_LM_SQL.format(trusted="p.lm_trusted"), state_rows=state_rows,
                                priors=priors, join=join, extra="".join(f", {c}" for c in extra),
                                prior_extra="".join(f", p.{c}" for c in extra))


# A pool's join key: a 64-bit hash of (url_pattern, host). Every URL joins the day's priors on
# it in less time than on the two strings.
POOL_KEY_SQL = "hash(url_pattern, host)"


def pooled_published_sql(con, state_rows: str, priors: str, extra: tuple = ()) -> str:
    """published_sql with state and priors joined on the pool key, or on the two strings if
    two of the priors' pools share a key (the priors hold every pool of the state's URLs, one
    row each, so distinct keys make the join exact)."""
    distinct = con.execute(f"SELECT count(DISTINCT {POOL_KEY_SQL}) = count(*) FROM {priors}").fetchone()[0]
    if not distinct:
        return published_sql(state_rows, priors, extra=extra)
    return published_sql(f"(SELECT *, {POOL_KEY_SQL} AS pool_key FROM {state_rows})",
                         f"(SELECT *, {POOL_KEY_SQL} AS pool_key FROM {priors})", join="ON s.pool_key = p.pool_key",
                         extra=extra)


def register_change_stats(con, state: UrlState, name: str = "change_stats") -> None:
    """View `name`: every URL's change_stats columns (URL_COLUMNS) on the state's day, one
    view with no helper views (the catalog keeps it for analysts)."""
    if state.priors is None:
        raise ValueError("the state's day has no priors yet: read it through url_state(root, date)")
    priors = f"SELECT {', '.join(PRIOR_COLUMNS)} FROM read_parquet({sql_literal(str(state.priors))})"
    try:
        con.execute(f"DESCRIBE {priors}")
    except duckdb.Error as exc:
        raise CrawlInputError(f"change_stats priors file {state.priors} cannot be read ({str(exc).splitlines()[0]}): "
                              "materialise change_stats for its day again") from None
    latest = f"({latest_state_sql(con, state)})"
    con.execute(f"CREATE VIEW {name} AS " + pooled_published_sql(con, latest, f"({priors})"))


def read_change_stats(root, date: str) -> pa.Table:
    """change_stats[date]'s URL table (URL_COLUMNS), in URL order, in memory: for small crawls
    and tests; the steps read the view."""
    con = connect()
    register_change_stats(con, url_state(root, date))
    return con.sql("SELECT * FROM change_stats ORDER BY url").to_arrow_table()
