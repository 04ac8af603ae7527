"""Host events: several pages of one host changing together, read from one day's visits.

Real changes are correlated: a site-wide template rebuild or a release touches most of a host
at once, and a rate estimated for each URL alone learns nothing from a rebuild seen on another
page. The day's revisits are a sample of each host's pages (the classic way to detect such
changes: Cho and Ntoulas 2002, "Effective change detection using sampling"); a host event is a
day on which, among the host's revisited pages,

- at least EVENT_MIN_PAGES moved: the text changed since our previous copy, or the payload
  alone on a page seen not moving before (a page whose payload moved on its first revisit
  may carry a counter, and one whose every revisit moved does: a template rebuild is told
  from a counter by a page that once stood still),
- they are at least EVENT_MIN_SHARE of the host's revisited pages,
- and far more than the pages' own rates expected: with p = 1 - e^{-λ d} the chance a
  revisited page changed over its interval d by its rate λ in the day before's change_stats
  (its own evidence and its pool's prior), the moves exceed Σp by at least EVENT_MIN_EXCESS
  and by at least EVENT_MIN_Z standard deviations (√Σp(1-p)): pages of an independent web
  that change as often as they usually do are no event, however many of them the day revisits.

The event happened after the latest of the moved pages' previous visits and before the
first of their visits that saw it (`last_event_after`, `last_event_before`): the copy of
every other page of the host fetched before that window is stale with about the share of
revisited pages that moved (`last_event_share`), and one fetched inside it with that share
times the part of the window after its fetch (the event's moment taken uniform in the
window). The priorities step makes those pages due at once (priority_queries.py).

A page whose every earlier revisit moved (a per-view counter, an ad) says nothing about the
host and is left out of the sample. Per host the table also keeps how often
events happen: `events` since the host was first watched (a day with at least
EVENT_MIN_PAGES revisits), and `event_rate` = events a day since then.

change_stats[D] writes the table (host_events.parquet: one row per host ever watched), the
day before's updated with day D's detections; a full rebuild (no day before, no rates to
expect moves from) detects none.
"""

from __future__ import annotations

import pyarrow as pa

EVENT_MIN_PAGES = 2
EVENT_MIN_SHARE = 0.5
EVENT_MIN_EXCESS = 1.5
EVENT_MIN_Z = 3.0

HOST_EVENTS_SCHEMA = pa.schema([
    ("host", pa.string()),
    ("watched_since", pa.timestamp("us", tz="UTC")),  # the first day with EVENT_MIN_PAGES revisits
    ("events", pa.int64()),
    ("event_rate", pa.float64()),  # events a day since watched_since
    ("day_event", pa.bool_()),  # an event detected on the table's day
    ("last_event_day", pa.date32()),
    ("last_event_after", pa.timestamp("us", tz="UTC")),  # the event came after this
    ("last_event_before", pa.timestamp("us", tz="UTC")),  # and before this
    ("last_event_share", pa.float64()),  # of the revisited pages, the share that moved
    ("last_event_pages", pa.int64()),  # pages seen moving
    ("last_event_revisits", pa.int64()),  # the host's revisited pages that day
])

# Per URL of the day (table `touched`, change_history's day columns; `rate_before`: its rate
# in the day before's change_stats, _UPDATE_SQL's first part): whether it counts as a sample
# of its host (a revisit today, not a page that moved on every earlier revisit), whether it
# moved, and the chance that it would have by its rate.
_SAMPLES_SQL = """
SELECT t.host, t.day_changed > 0 OR (t.day_moved > 0 AND t.intervals_before > t.moves_before) AS moved,
       t.moved_after_t, t.moved_by_t, 1 - exp(-coalesce(r.change_rate, 0) * t.day_interval) AS p
FROM touched t LEFT JOIN rate_before r USING (k1, k2)
WHERE t.day_revisits > 0 AND NOT (t.intervals_before > 0 AND t.moves_before >= t.intervals_before)
"""

_DAY_SQL = f"""
SELECT host, count(*) AS revisits, count(*) FILTER (moved) AS moved,
       count(*) FILTER (moved) - sum(p) AS excess, sqrt(sum(p * (1 - p))) AS spread,
       max(moved_after_t) FILTER (moved) AS event_after_t, min(moved_by_t) FILTER (moved) AS event_before_t
FROM ({_SAMPLES_SQL}) GROUP BY host
"""

# The day before's table (registered as _BEFORE) updated with the day's hosts ($day_start: day
# D's start, in days; {rates_before}: the query of the day before's rates).
_BEFORE = "host_events_before"
_UPDATE_SQL = f"""
WITH rate_before AS (SELECT k1, k2, change_rate FROM ({{rates_before}})),
day AS (
    SELECT *, moved >= {EVENT_MIN_PAGES} AND moved >= {EVENT_MIN_SHARE!r} * revisits
              AND excess >= {EVENT_MIN_EXCESS!r} AND excess >= {EVENT_MIN_Z!r} * spread AS is_event
    FROM ({_DAY_SQL})
),
merged AS (
    SELECT coalesce(d.host, p.host) AS host,
           coalesce(p.watched_since, CASE WHEN d.revisits >= {EVENT_MIN_PAGES}
                                          THEN make_timestamptz(CAST($day_start * 86400000000 AS BIGINT)) END)
             AS watched_since,
           coalesce(p.events, 0) + CASE WHEN d.is_event THEN 1 ELSE 0 END AS events,
           coalesce(d.is_event, false) AS day_event,
           CASE WHEN d.is_event THEN CAST(make_timestamptz(CAST($day_start * 86400000000 AS BIGINT)) AS DATE)
                ELSE p.last_event_day END AS last_event_day,
           CASE WHEN d.is_event THEN make_timestamptz(CAST(d.event_after_t * 86400000000 AS BIGINT))
                ELSE p.last_event_after END AS last_event_after,
           CASE WHEN d.is_event THEN make_timestamptz(CAST(d.event_before_t * 86400000000 AS BIGINT))
                ELSE p.last_event_before END AS last_event_before,
           CASE WHEN d.is_event THEN d.moved / d.revisits ELSE p.last_event_share END AS last_event_share,
           CASE WHEN d.is_event THEN d.moved ELSE p.last_event_pages END AS last_event_pages,
           CASE WHEN d.is_event THEN d.revisits ELSE p.last_event_revisits END AS last_event_revisits
    FROM day d FULL OUTER JOIN {_BEFORE} p USING (host)
)
SELECT host, watched_since, events,
       events / greatest($day_start + 1 - epoch(watched_since) / 86400.0, 1.0) AS event_rate,
       day_event, last_event_day, last_event_after, last_event_before, last_event_share, last_event_pages, last_event_revisits
FROM merged WHERE watched_since IS NOT NULL
ORDER BY host
"""


def empty_host_events() -> pa.Table:
    return HOST_EVENTS_SCHEMA.empty_table()


def update_host_events(con, before: pa.Table | None, day_start: float, rates_before: str | None) -> pa.Table:
    """The host events table after day D (`day_start`: its start, in days since the epoch)
    from temp table `touched` (the day's URLs with change_history's day columns), the query
    `rates_before` of the day before's rates (k1, k2, change_rate; None: a full rebuild,
    which detects none) and the day before's table (None: none)."""
    if rates_before is None:
        return empty_host_events()
    con.register(_BEFORE, before if before is not None else empty_host_events())
    try:
        update = _UPDATE_SQL.format(rates_before=rates_before)
        table = con.sql(update, params={"day_start": day_start}).to_arrow_table()
    finally:
        con.unregister(_BEFORE)
    return table.cast(HOST_EVENTS_SCHEMA)
