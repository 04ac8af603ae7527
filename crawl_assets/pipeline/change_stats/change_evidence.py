"""Change evidence from sitemaps and feeds: recorded by the fetch step, read by change_stats.

Recording: after a batch, every sitemap or feed it fetched in full (a 200 written as a
response record; a revisit's payload was recorded when first archived) is read back from
its WARC record and each listed URL with a date becomes a row (url, host, lastmod, source,
source_kind, observed_at). Reading the archive rather than holding rows in the engine keeps
them right after a crash and resume: the WARC record is the checkpointed truth.

Reading (change_stats[D]): the rows of every day up to D, one row per (url, lastmod), from
hosts whose dates can be trusted. As with Last-Modified (change_history.py), a host can lie,
and its own history tells: a host is not trusted when

- its dates say "now": at least LASTMOD_NOW_SHARE of its entries (given at least
  LASTMOD_MIN_ENTRIES) are dated within LASTMOD_NOW_WINDOW_S of the moment we read the
  document, or later (a CMS that stamps every entry with the moment the sitemap is made);
  honest dates cluster in the past, only pages changed in the last minutes are that close;
- or our visits contradict them: of its dates that fall between two of our visits of the
  page (given at least LASTMOD_MIN_CHECKS), fewer than LASTMOD_MIN_AGREEMENT found the
  payload changed (a CMS that bumps every date nightly, or on every build).

Untrusted hosts bring no evidence at all; their pages' rates rest on our own visits. Dates
later than the moment we read them are dropped too.
"""

from __future__ import annotations

import io
from datetime import date as Date, datetime, timedelta, timezone
from pathlib import Path

import duckdb
import pyarrow as pa
from warcio.archiveiterator import ArchiveIterator

from ...crawler.content.change_feeds import LISTING_TYPES, listing_of
from ...crawler.content.decoding import DecodingError, decode_body
from ...crawler.url_policy.urls import host_of
from ...crawler.vocabulary import StatusClass, WarcRecordKind
from ...storage.layout import shard_files
from ...storage.shared_root import connect
from .change_history import VISIT_TIME_IN_DAY
from .url_change_state import has_url_state, register_latest_state, url_state

CHANGE_EVIDENCE_SCHEMA = pa.schema([
    ("url", pa.string()),  # the listed page
    ("host", pa.string()),
    ("lastmod", pa.timestamp("us", tz="UTC")),  # when the document says the page last changed
    ("source", pa.string()),  # the sitemap or feed URL
    ("source_kind", pa.string()),  # change_feeds.ListKind
    ("observed_at", pa.timestamp("us", tz="UTC")),  # when we fetched the document
])
LASTMOD_NOW_WINDOW_S = 300
LASTMOD_NOW_SHARE = 0.5
LASTMOD_MIN_ENTRIES = 5
LASTMOD_MIN_CHECKS = 5
LASTMOD_MIN_AGREEMENT = 0.8  # looser than Last-Modified's: a date-only <lastmod> is coarse
# Only the visits of the last this many days judge a host: a bounded read of the fetch logs
# however long the crawl has run, and a host that mends its ways is believed again.
LASTMOD_CHECK_DAYS = 30


def evidence_of_batch(fetch_log: pa.Table, warc_dir: Path, max_body_bytes: int) -> pa.Table:
    """The dated entries of every sitemap and feed the batch archived in full."""
    rows: list[dict] = []
    for row in fetch_log.select(["url", "status_class", "warc_type", "content_type", "fetched_at",
                                 "warc_file", "warc_offset", "warc_length"]).to_pylist():
        media_type = (row["content_type"] or "").split(";", 1)[0].strip().lower()
        if (row["status_class"] != StatusClass.OK or row["warc_type"] != WarcRecordKind.RESPONSE
                or media_type not in LISTING_TYPES or row["warc_file"] is None):
            continue
        content = _payload(warc_dir / row["warc_file"], row["warc_offset"], row["warc_length"], max_body_bytes)
        listed = listing_of(content, media_type, row["url"], max_body_bytes) if content is not None else None
        if listed is None:
            continue
        kind, entries = listed
        # A document speaks for its own host's pages only (sitemaps.org: one host a sitemap):
        # another host's dates would make a page due, or a host's own honest dates look untrue.
        source_host = host_of(row["url"])
        rows += [{"url": e.url, "host": source_host, "lastmod": e.lastmod, "source": row["url"],
                  "source_kind": kind.value, "observed_at": row["fetched_at"]}
                 for e in entries if e.lastmod is not None and host_of(e.url) == source_host]
    return pa.Table.from_pylist(rows, schema=CHANGE_EVIDENCE_SCHEMA)


def _payload(path: Path, offset: int, length: int, limit: int) -> bytes | None:
    """The decoded payload of the response record at `offset` (one gzip member)."""
    with open(path, "rb") as fh:
        fh.seek(offset)
        member = fh.read(length)
    record = next(iter(ArchiveIterator(io.BytesIO(member))), None)
    if record is None:
        return None
    # raw_stream: the payload as archived, still in its Content-Encoding; decode_body caps it.
    encoding = record.http_headers.get_header("Content-Encoding") if record.http_headers else None
    try:
        return decode_body(record.raw_stream.read(), encoding, limit)[0]
    except DecodingError:
        return None


# Hosts whose dates say "now" (see above), over `entries` (host, lastmod, observed_at).
UNTRUSTED_HOSTS_SQL = """
SELECT host FROM entries GROUP BY host
HAVING count(*) >= $min_entries
   AND avg(CASE WHEN epoch(lastmod) >= epoch(observed_at) - $window THEN 1 ELSE 0 END) >= $share
"""
# Consecutive visits (t0, t1], in days, of the pages some entry dates, and whether the payload
# (less its per-request values: change_digest, where logged) moved between them (NULL: not
# known, no full answer before); over the fetch_log view. A CSRF token would otherwise make
# every visit "moved" and a host's false dates look true.
VISIT_PAIRS_SQL = f"""
SELECT url, t0, t1, CASE WHEN status_class = $not_modified THEN false
                         WHEN previous IS NOT NULL THEN digest <> previous END AS moved
FROM (
    SELECT url, status_class, digest, t AS t1, lag(t) OVER w AS t0,
           lag(digest IGNORE NULLS) OVER w AS previous
    FROM (SELECT url, status_class, {VISIT_TIME_IN_DAY} AS t,
                 CASE WHEN status_class = $ok THEN coalesce(change_digest, payload_digest, sha256) END AS digest
          FROM fetch_log WHERE status_class IN ($ok, $not_modified) AND url IN (SELECT url FROM entries))
    WINDOW w AS (PARTITION BY url ORDER BY t)
) WHERE t0 IS NOT NULL
"""
# Hosts whose dates between two visits mostly found nothing changed, over entries and visit_pairs.
CONTRADICTED_HOSTS_SQL = """
SELECT e.host FROM entries e
JOIN visit_pairs p ON p.url = e.url AND epoch(e.lastmod) / 86400.0 > p.t0 AND epoch(e.lastmod) / 86400.0 <= p.t1
WHERE p.moved IS NOT NULL
GROUP BY e.host
HAVING count(*) >= $min_checks AND avg(CASE WHEN p.moved THEN 1.0 ELSE 0.0 END) < $min_agreement
"""
# One row per (url, lastmod) from trusted hosts, none dated after it was read.
TRUSTED_EVIDENCE_SQL = """
SELECT url, lastmod FROM entries
WHERE host NOT IN (SELECT host FROM untrusted) AND epoch(lastmod) <= epoch(observed_at) + $window
GROUP BY url, lastmod ORDER BY url, lastmod
"""


def _trust_params() -> dict:
    return {"min_entries": LASTMOD_MIN_ENTRIES, "window": LASTMOD_NOW_WINDOW_S, "share": LASTMOD_NOW_SHARE}


def _judge_hosts(con, fetch_logs: list[str]) -> None:
    """Temp table untrusted (host) over the `entries` view and the fetch logs (may be none)."""
    con.execute("CREATE TEMP TABLE untrusted AS " + UNTRUSTED_HOSTS_SQL, _trust_params())
    if not fetch_logs:
        return
    logs = "read_parquet([" + ", ".join(_quoted(p) for p in fetch_logs) + "], hive_partitioning = true, union_by_name = true)"
    columns = {row[0] for row in con.execute(f"DESCRIBE SELECT * FROM {logs}").fetchall()}
    change_digest = "" if "change_digest" in columns else ", NULL::VARCHAR AS change_digest"  # (logs before it)
    con.execute(f"CREATE VIEW fetch_log AS SELECT *{change_digest} FROM {logs}")
    con.execute("CREATE TEMP TABLE visit_pairs AS " + VISIT_PAIRS_SQL,
                {"ok": StatusClass.OK, "not_modified": StatusClass.NOT_MODIFIED})
    con.execute("INSERT INTO untrusted " + CONTRADICTED_HOSTS_SQL,
                {"min_checks": LASTMOD_MIN_CHECKS, "min_agreement": LASTMOD_MIN_AGREEMENT})


def _quoted(path: str) -> str:
    return "'" + str(path).replace("'", "''") + "'"


def trusted_change_evidence(root: Path, date: str) -> pa.Table | None:
    """(url, lastmod) rows change_stats[date] takes as evidence, from the change_evidence
    files of every day up to `date`; None before any were recorded."""
    con = _judged_entries(root, date)
    if con is None:
        return None
    return con.sql(TRUSTED_EVIDENCE_SQL, params={"window": LASTMOD_NOW_WINDOW_S}).to_arrow_table()


# Our copies of the pages trusted dates list (over view state: change_stats' URL state).
LISTED_COPIES_SQL = """
SELECT s.url, s.host, s.last_visit_t FROM state s SEMI JOIN evidence e USING (url)
WHERE s.last_visit_t IS NOT NULL
"""


def listed_copies(root: Path, date: str, keep_host) -> dict[str, datetime]:
    """URL -> when change_stats[date] last saw it with content, for the pages the sitemaps and
    feeds of trusted hosts have dated up to `date`, on the hosts keep_host(host) accepts; {}
    before change_stats[date] or any date was recorded."""
    evidence = trusted_change_evidence(root, date)
    if evidence is None or not has_url_state(root, date):
        return {}
    con = connect()
    register_latest_state(con, url_state(root, date), "state")
    con.register("evidence", evidence.select(["url"]))
    rows = con.execute(LISTED_COPIES_SQL).fetchall()
    return {url: datetime.fromtimestamp(t * 86_400, timezone.utc) for url, host, t in rows if keep_host(host)}


def _judged_entries(root: Path, date: str):
    """A connection with view entries (every dated entry recorded up to `date`) and temp
    table untrusted (its hosts the rules above reject); None before any were recorded."""
    files = [str(p) for p in shard_files(root, "change_evidence", through=date)]
    if not files:
        return None
    first = (Date.fromisoformat(date) - timedelta(days=LASTMOD_CHECK_DAYS - 1)).isoformat()
    recent = [str(p) for p in shard_files(root, "fetch_log", through=date)
              if p.parent.parent.name.removeprefix("date=") >= first]
    con = connect()  # with the data root's file system (storage/shared_root.py)
    con.execute("CREATE VIEW entries AS SELECT url, host, lastmod, observed_at, source FROM read_parquet("
                "[" + ", ".join(_quoted(p) for p in files) + "], union_by_name = true) WHERE lastmod IS NOT NULL")
    _judge_hosts(con, recent)
    return con


def untrusted_hosts(evidence: pa.Table, fetch_logs: list[str] = ()) -> list[str]:
    """Hosts whose dates the rules above reject, of CHANGE_EVIDENCE_SCHEMA rows (and the
    fetch-log files of the visits that may contradict them)."""
    con = duckdb.connect()
    con.register("entries", evidence)
    _judge_hosts(con, [str(p) for p in fetch_logs])
    return sorted({h for (h,) in con.execute("SELECT host FROM untrusted").fetchall()})


# For the priorities, a sitemap or feed counts as linked from every page it dates: its worth
# is what it tells of them. Otherwise only robots.txt links a sitemap, and a document that
# changes whenever any of its pages does would look not worth fetching again. `listing`: a
# sitemap or feed of a host whose dates are trusted (the rules above), which the plan reads
# first, within settings.listing_reserve_share of the budget (day_plan.py).
LISTING_WEIGHT_SQL = """
SELECT k.url, k.host, greatest(k.inlinks, coalesce(l.listed, 0)) AS inlinks, coalesce(l.trusted, false) AS listing
FROM known k
LEFT JOIN (SELECT source AS url, count(DISTINCT url) AS listed,
                  bool_and(host NOT IN (SELECT host FROM untrusted)) AS trusted
           FROM entries GROUP BY source) l USING (url)
ORDER BY k.url
"""


def weigh_listings(known: pa.Table, root: Path, date: str) -> pa.Table:
    """known (url, host, inlinks) with each sitemap's and feed's in-links raised to the
    number of pages it has dated up to `date`, and column `listing` (LISTING_WEIGHT_SQL)."""
    con = _judged_entries(root, date)
    if con is None:
        return known
    con.register("known", known.select(["url", "host", "inlinks"]))
    return con.sql(LISTING_WEIGHT_SQL).to_arrow_table()
