"""Per-URL visit history in counts: the fetch rows of a window folded into the state the
previous window left (change_stats_step.py estimates rates from it).

One SQL serves both ways of building it:

- the full rebuild: every fetch up to day D folded into an empty state;
- the daily step: day D's fetches folded into the state of change_stats[D-1] (its base and
  delta files, url_change_state.py), so a day reads the whole rows of that day's URLs only,
  plus that day's log, not a re-sort of every fetch so far.

They agree because everything the history keeps is a sum, a count, a minimum or maximum, a
list, or "the last value so far" (carried in the state: the last visit's time and
Last-Modified, the last full answer's digest, SimHash and size), and a day's fetches all come
after the state's (in the crawl's hive layout a visit's time lies within its partition's day).
Sitemap and feed evidence is judged when a visit is folded in: a lastmod that only becomes
known later does not re-judge the intervals already folded (a full rebuild would).
"""

from __future__ import annotations

import duckdb
import pyarrow as pa

from ...crawler.settings import ARCHIVE_CHANGES, CHANGE_DEFINITIONS, CONTENT_CHANGES
from ...crawler.vocabulary import StatusClass

# Last-Modified agrees when it is not later than the fetch, give or take a minute of clock skew.
LM_FUTURE_SLACK_DAYS = 60 / 86400
GONE_STATUSES = (404, 410)
HTTP_DATE = "%a, %d %b %Y %H:%M:%S GMT"
LASTMOD_EVIDENCE_SCHEMA = pa.schema([("url", pa.string()), ("lastmod", pa.timestamp("us", tz="UTC"))])

# A visit's time in days since the epoch. In the crawl's hive layout a fetch made outside
# its partition's day counts at the start of that day: a backfill, or a test replaying days
# in a row, fetches day D's batch later than D, and its visits stand for day D (a nightly
# run's fetched_at lies within its day and is kept).
VISIT_TIME = "epoch(fetched_at) / 86400.0"
VISIT_TIME_IN_DAY = ("CASE WHEN epoch(fetched_at) - epoch(CAST(date AS DATE)) BETWEEN 0 AND 86399.999999 "
                     "THEN epoch(fetched_at) ELSE epoch(CAST(date AS DATE)) END / 86400.0")

# The state one day hands to the next, beside the published per-URL columns: the URL's two
# 64-bit hashes (the join key: a collision needs 2^64 URLs), the raw sums the estimators need,
# and the last values each next visit is compared with.
STATE_SQL_TYPES = {
    "k1": "UBIGINT", "k2": "UBIGINT", "url": "VARCHAR", "host": "VARCHAR", "url_pattern": "VARCHAR",
    "visits": "BIGINT", "intervals": "BIGINT", "changes": "BIGINT", "boilerplate_changes": "BIGINT",
    "not_modified": "BIGINT", "visit_days": "DOUBLE", "unchanged_days": "DOUBLE",
    "shortest_interval": "DOUBLE", "longest_interval": "DOUBLE", "changed_intervals": "DOUBLE[]",
    "lm_checks": "BIGINT", "lm_agreements": "BIGINT", "lm_missing": "BIGINT", "lm_changes": "BIGINT",
    "lm_days": "DOUBLE", "last_visit_t": "DOUBLE", "last_fetch_t": "DOUBLE", "last_status": "INTEGER",
    "last_status_class": "VARCHAR", "gone_streak": "BIGINT", "bytes_saved": "BIGINT",
    "last_visit_lm": "DOUBLE", "last_digest": "UBIGINT", "last_simhash": "UBIGINT", "last_body_bytes": "BIGINT",
    "interval_rate": "DOUBLE", "interval_estimator": "VARCHAR", "last_change_key": "UBIGINT",
}
# State columns a file written before them may lack: read as NULL (url_change_state.py).
LATER_STATE_COLUMNS = ("last_change_key",)
STATE_COLUMNS = tuple(STATE_SQL_TYPES)


# The fetch_log view over the files (a view cannot take parameters: the path(s) go in as quoted
# SQL literals, {files}), with columns {later} adds; the columns the fold reads, which a file
# that is no fetch log lacks; change_digest for logs written before it (compared by their
# payload digest).
_LOG_VIEW_SQL = ("CREATE OR REPLACE VIEW fetch_log AS SELECT *{later} "
                 "FROM read_parquet({files}, hive_partitioning = true, union_by_name = true)")
_LOG_COLUMNS_SQL = ("SELECT url, host, status, status_class, fetched_at, bytes, sha256, payload_digest, simhash, "
                    "last_modified FROM fetch_log LIMIT 0")
_NO_CHANGE_DIGEST = ", NULL::VARCHAR AS change_digest"


def read_fetch_log(con, glob) -> str:
    """The fetch_log view over the files; returns the SQL of a visit's time."""
    try:
        con.execute(_LOG_VIEW_SQL.format(later="", files=sql_literal(glob)))
        con.execute(_LOG_COLUMNS_SQL)
        columns = set(con.table("fetch_log").columns)
    except duckdb.Error as exc:
        raise ValueError(f"fetch log {glob!r} cannot be read as the crawl's fetch-log Parquet "
                         f"(run the fetch step first, or check the path): {exc}") from None
    if "change_digest" not in columns:
        con.execute(_LOG_VIEW_SQL.format(later=_NO_CHANGE_DIGEST, files=sql_literal(glob)))
    return VISIT_TIME_IN_DAY if "date" in columns else VISIT_TIME


def sql_literal(glob) -> str:
    paths = [glob] if isinstance(glob, str) else list(glob)
    quoted = ", ".join("'" + str(p).replace("'", "''") + "'" for p in paths)
    return quoted if isinstance(glob, str) else f"[{quoted}]"


# No URL seen before the window (a full rebuild): every state column, no row.
_EMPTY_STATE_SQL = ("CREATE VIEW state_before AS SELECT "
                    + ", ".join(f"NULL::{sql_type} AS {name}" for name, sql_type in STATE_SQL_TYPES.items())
                    + ", NULL::BOOLEAN AS pending_change LIMIT 0")


def empty_state(con) -> None:
    """The state_before view of a full rebuild: no URL seen before the window."""
    con.execute(_EMPTY_STATE_SQL)


# The window's fetches, each beside the URL's previous visit and previous full answer: one
# window over the window's rows sorted by URL and time, falling back on the state for the
# first of them; IGNORE NULLS skips the fetches that are not visits (errors) or carry no body
# (304s) so they are compared with what the crawl last saw.
_FOLD_SQL = """
CREATE TEMP TABLE window_history AS
WITH fetches AS (
    -- Only numbers go through the sort: the URL as two 64-bit hashes, the digest as one (it
    -- is only compared with the previous one).
    SELECT hash(url) AS k1, hash(url, 1) AS k2, status, status_class, {visit_time} AS t,
           status_class IN ($ok, $not_modified) AS is_visit,
           CASE WHEN status_class = $ok THEN hash(coalesce(payload_digest, sha256)) END AS digest,
           CASE WHEN status_class = $ok AND change_digest IS NOT NULL THEN hash(change_digest) END AS change_key,
           CASE WHEN status_class = $ok THEN simhash END AS simhash,
           CASE WHEN status_class = $ok THEN bytes END AS body_bytes,
           epoch(try_strptime(last_modified, $http_date)) / 86400.0 AS lm
    FROM fetch_log
    WHERE {visit_time} >= $start_day AND {visit_time} < $end_day
),
with_evidence AS ({evidence}),
sequenced AS (
    SELECT *,
           row_number() OVER w AS rn,
           lag(CASE WHEN is_visit THEN t END IGNORE NULLS) OVER w AS window_prev_t,
           lag(CASE WHEN is_visit THEN lm END IGNORE NULLS) OVER w AS window_prev_lm,
           lag(CASE WHEN is_visit THEN seen END IGNORE NULLS) OVER w AS window_prev_seen,
           lag(digest IGNORE NULLS) OVER w AS window_prev_digest,
           lag(change_key IGNORE NULLS) OVER w AS window_prev_change_key,
           lag(simhash IGNORE NULLS) OVER w AS window_prev_simhash,
           lag(body_bytes IGNORE NULLS) OVER w AS window_prev_body_bytes,
           count(*) OVER (w ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS n_fetches
    FROM with_evidence
    WINDOW w AS (PARTITION BY k1, k2 ORDER BY t, status)
),
carried AS (
    SELECT s.*,
           coalesce(window_prev_t, c.last_visit_t) AS prev_t,
           coalesce(window_prev_lm, c.last_visit_lm) AS prev_lm,
           coalesce(window_prev_seen, c.last_visit_seen) AS prev_seen,
           coalesce(window_prev_digest, c.last_digest) AS prev_digest,
           coalesce(window_prev_change_key, c.last_change_key) AS prev_change_key,
           coalesce(window_prev_simhash, c.last_simhash) AS prev_simhash,
           coalesce(window_prev_body_bytes, c.last_body_bytes) AS prev_body_bytes
    FROM sequenced s LEFT JOIN ({carry_seen}) c USING (k1, k2)
),
-- What each visit tells: its interval, whether the archived bytes (less their per-request
-- values: bytes_moved; by the payload digest where either answer predates change_digest) or
-- the text changed (bytes_moved and the SimHash too, or a listed date says so: text_changed),
-- which of them is a change (settings.change_definition), what Last-Modified says. A rendered
-- page's change digest and SimHash are its rendered DOM's (crawler/rendering/render_pass.py):
-- its shell's payload digest may stay while what its scripts load changes.
judged AS MATERIALIZED (
    SELECT *, {changed_by} AS changed
    FROM (SELECT *,
                 CASE WHEN is_visit THEN t - prev_t END AS interval_days,
                 bytes_moved AND NOT text_moved AS boilerplate_only,
                 is_visit AND prev_t IS NOT NULL AND (text_moved OR seen > coalesce(prev_seen, 0)) AS text_changed
    FROM (SELECT *, bytes_moved AND coalesce(bit_count(xor(simhash, prev_simhash)) > $threshold, true) AS text_moved
    FROM (SELECT *,
                 CASE WHEN change_key IS NOT NULL AND prev_change_key IS NOT NULL THEN change_key <> prev_change_key
                      ELSE coalesce(digest <> prev_digest, false) END AS bytes_moved
          FROM carried)))
)
{per_url}
"""

def _if(condition: str) -> str:
    """1 where `condition` holds, else 0: a count's FILTER over a URL's one row."""
    return f"CASE WHEN {condition} THEN 1 ELSE 0 END::BIGINT"


# What the window tells of each URL: (column, its aggregate over the URL's fetches, the same
# for a URL fetched once in the window). Most URLs are fetched once a day: their row is
# projected instead of grouped (a hash aggregate of 30 columns over one-row groups was a large
# part of the fold's time); test_daily_step_equals_the_full_rebuild holds both
# forms to the same state (the rebuild groups many fetches a URL, a day one).
_PER_URL = (
    ("fetches", "count(*)", "1"),
    ("visits", "count(*) FILTER (is_visit)", _if("is_visit")),
    ("intervals", "count(interval_days)", _if("interval_days IS NOT NULL")),
    ("changes", "count(*) FILTER (changed)", _if("changed")),
    ("boilerplate_changes", "count(*) FILTER (boilerplate_only)", _if("boilerplate_only")),
    ("not_modified", "count(*) FILTER (status_class = $not_modified)", _if("status_class = $not_modified")),
    ("visit_days", "coalesce(sum(interval_days), 0)", "coalesce(interval_days, 0)"),
    ("unchanged_days", "coalesce(sum(interval_days) FILTER (NOT changed), 0)",
     "CASE WHEN NOT changed THEN coalesce(interval_days, 0) ELSE 0 END"),
    ("shortest_interval", "min(interval_days)", "interval_days"),
    ("longest_interval", "max(interval_days)", "interval_days"),
    ("changed_intervals", "list(interval_days) FILTER (changed)", "CASE WHEN changed THEN [interval_days] END"),
    # Last-Modified: pairs of visits that both carry one, and whether it told the truth.
    ("lm_checks", "count(*) FILTER ({lm_pair})", _if("{lm_pair}")),
    ("lm_agreements", "count(*) FILTER ({lm_pair} AND {lm_true})", _if("{lm_pair} AND {lm_true}")),
    # The Last-Modified estimator: a changed visit is one change and the time since it (the
    # last change lies inside the interval); an unchanged interval is wholly unchanged. The
    # first sighting is neither: its Last-Modified says when the page last changed (or was
    # made, or its site deployed), not how often; and the time back to it is no fair sample
    # of unchanged time (it ends at our visit because no change came between), so counted as
    # such it drags every rate towards 0. Observation starts at the first visit: no rate
    # comes from one sighting, and a URL visited once is on its pool's prior (its age is
    # survival evidence for that URL alone: url_change_state.UNCHANGED_SINCE_LM_SQL).
    ("lm_missing", "count(*) FILTER (changed AND lm IS NULL)", _if("changed AND lm IS NULL")),
    ("lm_changes", "count(*) FILTER ({lm_change})", _if("{lm_change}")),
    ("lm_days", "coalesce(sum({lm_span}), 0)", "coalesce({lm_span}, 0)"),
    ("last_visit_t", "max(t) FILTER (is_visit)", "CASE WHEN is_visit THEN t END"),
    ("last_fetch_t", "max(t)", "t"),
    ("last_status", "arg_max(status, rn)", "status"),
    ("last_status_class", "arg_max(status_class, rn)", "status_class"),
    ("gone_streak", "count(*) - coalesce(max(rn) FILTER ({not_gone}), 0)", "1 - " + _if("{not_gone}")),
    ("all_gone", "max(rn) FILTER ({not_gone}) IS NULL", "NOT coalesce({not_gone}, false)"),
    ("bytes_saved", "coalesce(sum(prev_body_bytes) FILTER (status_class = $not_modified), 0)",
     "CASE WHEN status_class = $not_modified THEN coalesce(prev_body_bytes, 0) ELSE 0 END"),
    # the last values the next window compares with
    ("last_visit_lm", "arg_max(lm, rn) FILTER (is_visit AND lm IS NOT NULL)",
     "CASE WHEN is_visit AND lm IS NOT NULL THEN lm END"),
    ("last_digest", "arg_max(digest, rn) FILTER (digest IS NOT NULL)", "digest"),
    ("last_change_key", "arg_max(change_key, rn) FILTER (change_key IS NOT NULL)", "change_key"),
    ("last_simhash", "arg_max(simhash, rn) FILTER (simhash IS NOT NULL)", "simhash"),
    ("last_body_bytes", "arg_max(body_bytes, rn) FILTER (body_bytes IS NOT NULL)", "body_bytes"),
    # the day D itself: what conditional GET saved that day
    ("day_visits", "count(*) FILTER (is_visit AND {in_day})", _if("is_visit AND {in_day}")),
    ("day_not_modified", "count(*) FILTER (status_class = $not_modified AND {in_day})",
     _if("status_class = $not_modified AND {in_day}")),
    ("day_bytes_saved", "coalesce(sum(prev_body_bytes) FILTER (status_class = $not_modified AND {in_day}), 0)",
     "CASE WHEN status_class = $not_modified AND {in_day} THEN coalesce(prev_body_bytes, 0) ELSE 0 END"),
    # the day's revisits as a sample of their host (host_events.py): whether each moved (its
    # payload or text changed) and whether its text did (whatever the change definition: the
    # events tell a counter from a rebuild by the text), since when, over what interval
    ("day_revisits", "count(*) FILTER ({revisit})", _if("{revisit}")),
    ("day_moved", "count(*) FILTER ({revisit} AND {moved})", _if("{revisit} AND {moved}")),
    ("day_changed", "count(*) FILTER ({revisit} AND text_changed)", _if("{revisit} AND text_changed")),
    ("moved_after_t", "max(prev_t) FILTER ({revisit} AND {moved})",
     "CASE WHEN {revisit} AND {moved} THEN prev_t END"),
    ("moved_by_t", "min(t) FILTER ({revisit} AND {moved})", "CASE WHEN {revisit} AND {moved} THEN t END"),
    ("day_interval", "coalesce(sum(interval_days) FILTER ({revisit}), 0)",
     "CASE WHEN {revisit} THEN interval_days ELSE 0 END"),
)
_PER_URL_TERMS = {
    "lm_pair": "prev_t IS NOT NULL AND lm IS NOT NULL AND prev_lm IS NOT NULL",
    "lm_true": "(lm <> prev_lm) = changed AND lm <= t + $slack",
    "lm_change": "is_visit AND lm IS NOT NULL AND changed",
    "lm_span": "CASE WHEN changed THEN least(greatest(t - lm, 0), interval_days) ELSE interval_days END",
    "not_gone": "status NOT IN {gone}",  # (GONE_STATUSES, filled in by _per_url_sql)
    "in_day": "t >= $end_day - 1",
    "revisit": "is_visit AND prev_t IS NOT NULL AND t >= $end_day - 1",
    "moved": "(text_changed OR bytes_moved)",
}


def _per_url_sql() -> str:
    """The fold's last part: URLs fetched more than once in the window grouped, the others
    projected, both with the columns of _PER_URL in its order (UNION ALL matches by place)."""
    terms = {name: term.format(gone=str(GONE_STATUSES)) for name, term in _PER_URL_TERMS.items()}
    grouped = ",\n       ".join(f"{aggregate.format(**terms)} AS {name}" for name, aggregate, _ in _PER_URL)
    single = ",\n       ".join(f"{row.format(**terms)} AS {name}" for name, _, row in _PER_URL)
    return (f"SELECT k1, k2,\n       {grouped}\nFROM judged WHERE n_fetches > 1 GROUP BY k1, k2\n"
            f"UNION ALL\nSELECT k1, k2,\n       {single}\nFROM judged WHERE n_fetches = 1")


# The names behind the hashes: one row per URL of the window.
_NAMES_SQL = """
CREATE TEMP TABLE window_names AS
SELECT hash(url) AS k1, hash(url, 1) AS k2, any_value(url) AS url, any_value(host) AS host
FROM fetch_log WHERE {visit_time} >= $start_day AND {visit_time} < $end_day GROUP BY ALL
"""

_NO_EVIDENCE = "SELECT *, 0 AS seen FROM fetches"
# `seen` = how many lastmod observations of the URL lie at or before the fetch; a visit whose
# count exceeds the previous visit's had a published change inside its interval.
_WITH_EVIDENCE = """
    SELECT f.*, coalesce(e.seen, 0) AS seen
    FROM fetches f ASOF LEFT JOIN evidence_seen e
      ON f.k1 = e.k1 AND f.k2 = e.k2 AND f.t >= e.lastmod_t
"""
_CARRY_NO_EVIDENCE = "SELECT *, 0 AS last_visit_seen FROM carry"
# The state's last visit counted against the same evidence as the window's fetches.
_CARRY_WITH_EVIDENCE = """
    SELECT c.*, coalesce(e.seen, 0) AS last_visit_seen
    FROM carry c ASOF LEFT JOIN evidence_seen e
      ON c.k1 = e.k1 AND c.k2 = e.k2 AND c.last_visit_t >= e.lastmod_t
"""

def _sums(*columns: str) -> str:
    """State columns that are sums: the day before's plus the window's (0 for a side without)."""
    return ",\n       ".join(f"coalesce(c.{name}, 0) + coalesce(d.{name}, 0) AS {name}" for name in columns)


# The state of the window's URLs after it: the day before's state with the window's fetches
# added in (or the window's alone for a URL first fetched in it).
_MERGE_SQL = """
CREATE TEMP TABLE window_state AS
SELECT d.k1, d.k2,
       coalesce(c.url, n.url) AS url, coalesce(c.host, n.host) AS host, c.url_pattern,
       {visit_sums},
       least(c.shortest_interval, d.shortest_interval) AS shortest_interval,
       greatest(c.longest_interval, d.longest_interval) AS longest_interval,
       CASE WHEN c.changed_intervals IS NULL THEN d.changed_intervals
            WHEN d.changed_intervals IS NULL THEN c.changed_intervals
            ELSE list_concat(c.changed_intervals, d.changed_intervals) END AS changed_intervals,
       {last_modified_sums},
       coalesce(d.last_visit_t, c.last_visit_t) AS last_visit_t,
       coalesce(d.last_fetch_t, c.last_fetch_t) AS last_fetch_t,
       CASE WHEN d.k1 IS NULL THEN c.last_status ELSE d.last_status END AS last_status,
       CASE WHEN d.k1 IS NULL THEN c.last_status_class ELSE d.last_status_class END AS last_status_class,
       CASE WHEN d.k1 IS NULL THEN c.gone_streak WHEN d.all_gone THEN coalesce(c.gone_streak, 0) + d.fetches
            ELSE d.gone_streak END AS gone_streak,
       {bytes_sums},
       coalesce(d.last_visit_lm, c.last_visit_lm) AS last_visit_lm,
       coalesce(d.last_digest, c.last_digest) AS last_digest,
       coalesce(d.last_change_key, c.last_change_key) AS last_change_key,
       coalesce(d.last_simhash, c.last_simhash) AS last_simhash,
       coalesce(d.last_body_bytes, c.last_body_bytes) AS last_body_bytes,
       c.interval_rate, c.interval_estimator,
       d.day_visits, d.day_not_modified, d.day_bytes_saved,
       d.day_revisits, d.day_moved, d.day_changed, d.moved_after_t, d.moved_by_t, d.day_interval,
       coalesce(c.changes, 0) + {boilerplate_moves} AS moves_before,
       coalesce(c.visit_days, 0) AS days_before, coalesce(c.intervals, 0) AS intervals_before
FROM window_history d
JOIN window_names n USING (k1, k2)
LEFT JOIN carry c ON c.k1 = d.k1 AND c.k2 = d.k2
""".format(visit_sums=_sums("visits", "intervals", "changes", "boilerplate_changes", "not_modified",
                            "visit_days", "unchanged_days"),
           last_modified_sums=_sums("lm_checks", "lm_agreements", "lm_missing", "lm_changes", "lm_days"),
           bytes_sums=_sums("bytes_saved"), boilerplate_moves="{boilerplate_moves}")
# A URL's moves before the window (host_events.py): its changes, and its boilerplate-only
# moves where they are not changes already (settings.change_definition).
_BOILERPLATE_MOVES = {ARCHIVE_CHANGES: "0", CONTENT_CHANGES: "coalesce(c.boilerplate_changes, 0)"}
# Which move of a visit is a change, per settings.change_definition.
_CHANGED_BY = {ARCHIVE_CHANGES: "text_changed OR (is_visit AND prev_t IS NOT NULL AND bytes_moved)",
               CONTENT_CHANGES: "text_changed"}

# The URLs whose state the window changed: those fetched in it, and those whose pending change
# flipped (a listed date after the last visit appeared, or its evidence went away).
_CHANGED_SQL = """
CREATE TEMP TABLE changed AS
SELECT {columns}, {touched_pending} AS pending_change FROM touched t {touched_evidence}
UNION ALL
SELECT {columns}, NOT t.pending_change AS pending_change FROM (SELECT * FROM carry ANTI JOIN touched USING (k1, k2)) t
"""
# Every URL's state after the window: the day before's (streamed from its files, never copied
# into a table) for the URLs the window left alone, and the changed ones.
_STATE_ROWS_SQL = """
CREATE VIEW state_rows AS
SELECT * FROM state_before ANTI JOIN changed USING (k1, k2)
UNION ALL BY NAME
SELECT * FROM changed
"""
# Sitemap and feed dates (view lastmod_evidence): per URL, how many lie at or before each date
# (`seen`), and the latest before the window's end.
_EVIDENCE_SEEN_SQL = """
CREATE TEMP TABLE evidence_seen AS
SELECT hash(url) AS k1, hash(url, 1) AS k2, epoch(lastmod) / 86400.0 AS lastmod_t,
       row_number() OVER (PARTITION BY url ORDER BY lastmod) AS seen
FROM lastmod_evidence
"""
_LATEST_LASTMOD_SQL = """
CREATE TEMP TABLE latest_lastmod AS
SELECT k1, k2, max(lastmod_t) AS lastmod_t FROM evidence_seen WHERE lastmod_t < $end_day GROUP BY k1, k2
"""
# Only the rows of the window's URLs (and the flipped ones) leave the state's files whole.
_CARRY_SQL = """
CREATE TEMP TABLE carry AS
SELECT * FROM state_before SEMI JOIN (SELECT k1, k2 FROM window_names UNION {flipped}) USING (k1, k2)
"""
# The window's tables, merged into window_state.
_DROP_WINDOW_TABLES_SQL = "DROP TABLE window_history; DROP TABLE window_names"
# The URLs of the state before the window whose pending_change is no longer what it was.
_FLIPPED_KEYS = {
    True: "SELECT k1, k2 FROM state_before s LEFT JOIN latest_lastmod l USING (k1, k2) "
          "WHERE coalesce(l.lastmod_t > s.last_visit_t, false) <> s.pending_change",
    False: "SELECT k1, k2 FROM state_before WHERE pending_change",
}
# The fold's parameters that are constants.
_FOLD_CONSTANTS = {"ok": StatusClass.OK, "not_modified": StatusClass.NOT_MODIFIED, "http_date": HTTP_DATE,
                   "slack": LM_FUTURE_SLACK_DAYS}
# A touched URL's pending change: with evidence, a listed date after its last visit.
_TOUCHED_PENDING = {
    True: ("coalesce(l.lastmod_t > t.last_visit_t, false)", "LEFT JOIN latest_lastmod l USING (k1, k2)"),
    False: ("false", ""),
}


def fold_history(con, glob, start_day: float, end_day: float, threshold: int, evidence: pa.Table | None,
                 definition: str = ARCHIVE_CHANGES) -> None:
    """Temp table window_state: the state of the URLs fetched in [start_day, end_day) (days
    since the epoch) after folding their fetches into view state_before (every URL's state
    before the window, STATE_COLUMNS and pending_change: the caller registers it, empty_state
    for none). Temp table carry: state_before's rows of the URLs the window may change, read
    in one pass. The caller makes table `touched` of window_state with their own rates
    (interval_rate, interval_estimator) and then calls every_url_state. definition: what
    counts as a change (settings.change_definition)."""
    if definition not in CHANGE_DEFINITIONS:
        raise ValueError(f"setting change_definition must be one of {CHANGE_DEFINITIONS}, not {definition!r}")
    visit_time = read_fetch_log(con, glob)
    if evidence is not None:
        missing = {"url", "lastmod"} - set(evidence.column_names)
        if missing:
            raise ValueError(f"lastmod evidence needs columns url and lastmod; missing {sorted(missing)}")
        con.register("lastmod_evidence", evidence.select(["url", "lastmod"]).cast(LASTMOD_EVIDENCE_SCHEMA))
        con.execute(_EVIDENCE_SEEN_SQL)
        con.execute(_LATEST_LASTMOD_SQL, {"end_day": end_day})
    window = {"start_day": start_day, "end_day": end_day}
    con.execute(_NAMES_SQL.format(visit_time=visit_time), window)
    con.execute(_CARRY_SQL.format(flipped=_FLIPPED_KEYS[evidence is not None]))
    sql = _FOLD_SQL.format(per_url=_per_url_sql(), evidence=_NO_EVIDENCE if evidence is None else _WITH_EVIDENCE,
                           carry_seen=_CARRY_NO_EVIDENCE if evidence is None else _CARRY_WITH_EVIDENCE,
                           visit_time=visit_time, changed_by=_CHANGED_BY[definition])
    con.execute(sql, {**_FOLD_CONSTANTS, "threshold": threshold, **window})
    con.execute(_MERGE_SQL.replace("{boilerplate_moves}", _BOILERPLATE_MOVES[definition]))
    con.execute(_DROP_WINDOW_TABLES_SQL)


def every_url_state(con, with_evidence: bool) -> None:
    """Temp table changed: the state rows (STATE_COLUMNS, pending_change) the window changed;
    view state_rows: every URL's state after the window. pending_change: a sitemap or feed
    lastmod after the last visit."""
    columns = ", ".join(f"t.{name}" for name in STATE_COLUMNS)
    pending = _TOUCHED_PENDING[with_evidence]
    con.execute(_CHANGED_SQL.format(columns=columns, touched_pending=pending[0], touched_evidence=pending[1]))
    con.execute(_STATE_ROWS_SQL)
