"""A day's key figures, the recrawl in numbers: what day_report puts on its asset (the asset
page's Plots draw them across partitions) and what `make demo` prints per day.

Every answer of the day is one of: new (a 200 for a URL no earlier answer had), changed (a 200
whose payload differs from the URL's previous answer), unchanged (a 304, or a 200 with the same
payload), or something else (a redirect, an error, ...). A 304 saved the bytes of the URL's
latest full answer before it. No Dagster here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ...crawler.vocabulary import TRAP_DEFENCES
from ...storage.layout import near_clusters_file, shard_files
from ...storage.shared_root import query_connection
from ..priorities.priority_queries import Kind
from ..priorities.recrawl_plan import priorities_files

# Each answer of the day against the URL's earlier answers (200 or 304) of this day and before.
ANSWERS_SQL = """
WITH visits AS (
    SELECT url, status, payload_digest, bytes, fetched_at, date::VARCHAR AS day,
           lag(payload_digest) OVER w AS previous,
           last_value(CASE WHEN status = 200 THEN bytes END IGNORE NULLS) OVER (
               w ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS previous_bytes
    FROM read_parquet($files, hive_partitioning = true, union_by_name = true)
    WHERE status IN (200, 304)
    WINDOW w AS (PARTITION BY url ORDER BY fetched_at)
)
SELECT count(*) FILTER (WHERE status = 200 AND previous IS NULL) AS new,
       count(*) FILTER (WHERE status = 200 AND previous IS NOT NULL AND payload_digest IS DISTINCT FROM previous)
           AS changed,
       count(*) FILTER (WHERE status = 304) AS not_modified,
       count(*) FILTER (WHERE status = 200 AND payload_digest = previous) AS identical,
       coalesce(sum(previous_bytes) FILTER (WHERE status = 304), 0)::BIGINT AS bytes_saved
FROM visits WHERE day = $date
"""

FETCHED_SQL = """
SELECT count(*) FILTER (WHERE status IS NOT NULL) FROM read_parquet($files, union_by_name = true)
"""

TRAPS_SQL = """
SELECT coalesce(sum(urls), 0)::BIGINT FROM read_parquet($files, union_by_name = true)
WHERE reason IN (SELECT unnest($reasons))
"""


@dataclass(frozen=True)
class DayFigures:
    date: str
    pages_fetched: int  # answered requests (any HTTP status)
    new_urls: int
    changed: int
    not_modified: int  # 304 answers
    identical: int  # 200 answers with the payload of the URL's previous answer
    bytes_saved: int  # by the 304s: the URL's latest full answer, not downloaded again
    trap_refusals: int  # URLs the trap defences refused (dropped_urls)
    near_duplicate_groups: int | None  # groups of two or more pages (None: dedup has not run)
    near_duplicate_share: float | None  # pages that are not their group's representative
    planned_for_tomorrow: int | None  # URLs in the recrawl plan for the next day
    planned_refreshes: int | None  # of those, known URLs fetched again

    @property
    def not_modified_share(self) -> float:
        return self.not_modified / self.pages_fetched if self.pages_fetched else 0.0

    def fetch_numbers(self) -> dict[str, int | float]:
        """The figures of the day's fetches (day_report's own inputs), the 304 share included;
        the near-duplicate and plan figures are on near_duplicate_clusters and recrawl_priorities."""
        return {"pages_fetched": self.pages_fetched, "new_urls": self.new_urls, "changed": self.changed,
                "not_modified": self.not_modified, "identical": self.identical,
                "not_modified_share": round(self.not_modified_share, 4), "bytes_saved": self.bytes_saved,
                "trap_refusals": self.trap_refusals}


def day_figures(root: Path, date: str) -> DayFigures:
    """The figures of `date` from the data root's files (of the shards that wrote them)."""
    con = query_connection()
    history = [str(p) for p in shard_files(root, "fetch_log", through=date)]
    today = [p for p in history if f"date={date}" in p]
    new, changed, not_modified, identical, saved = (
        con.execute(ANSWERS_SQL, {"files": history, "date": date}).fetchone() if history else (0,) * 5)
    fetched = con.execute(FETCHED_SQL, {"files": today}).fetchone()[0] if today else 0
    dropped = [str(p) for p in shard_files(root, "dropped_urls", through=date) if f"date={date}" in str(p)]
    traps = (con.execute(TRAPS_SQL, {"files": dropped, "reasons": sorted(TRAP_DEFENCES)}).fetchone()[0]
             if dropped else 0)
    groups, share = _near_duplicates(con, near_clusters_file(root, date))
    planned, refreshes = _plan(con, priorities_files(root, date))
    con.close()
    return DayFigures(date, fetched, new, changed, not_modified, identical, saved, traps, groups, share,
                      planned, refreshes)


def _near_duplicates(con, clusters: Path) -> tuple[int | None, float | None]:
    if not clusters.exists():
        return None, None
    groups, copies, pages = con.execute(
        "SELECT count(DISTINCT representative) FILTER (WHERE cluster_size > 1), "
        "count(*) FILTER (WHERE url <> representative), count(*) FROM read_parquet($f)",
        {"f": str(clusters)}).fetchone()
    return groups, round(copies / pages, 4) if pages else 0.0


def _plan(con, priorities: list[Path]) -> tuple[int | None, int | None]:
    if not priorities:
        return None, None
    return con.execute("SELECT count(*) FILTER (WHERE planned), count(*) FILTER (WHERE planned AND kind = $refresh) "
                       "FROM read_parquet($f)", {"f": [str(p) for p in priorities], "refresh": Kind.REFRESH.value}).fetchone()
