"""Each host's politeness delay as the day's fetches kept it, for recrawl_priorities' cap of
86,400 / delay fetches a day.

The pipeline never sees a host's robots.txt Crawl-delay or the engine's adaptive slow-down
(crawler/fetching/politeness.py), but the fetch log shows what they did: the engine never starts a
request to a host sooner than its delay after the end of the one before, so the shortest
gap between the end of one answered request (fetched_at + duration) and the start of the
next is at least the delay in force. A gap can only be longer (the host's queue ran dry, a
robots.txt or a retry took a turn), so the shortest of at least MIN_GAPS gaps is taken, no
shorter than default_delay_s and no longer than the longest delay the engine would keep
(max_crawl_delay_s or max_adaptive_delay_s): a host whose queue ran dry between a few
requests is not starved for it. Hosts with fewer gaps get default_delay_s.
"""

from __future__ import annotations

from pathlib import Path

from ...crawler.settings import CrawlSettings
from ...storage.layout import shard_files
from ...storage.shared_root import query_connection

MIN_GAPS = 3

OBSERVED_DELAYS_SQL = """
WITH answered AS (
    SELECT host, epoch(fetched_at) AS start_s, epoch(fetched_at) + coalesce(duration_ms, 0) / 1000.0 AS end_s
    FROM read_parquet($logs, union_by_name = true)
    WHERE fetched_at IS NOT NULL AND status IS NOT NULL
),
gaps AS (
    SELECT host, start_s - lag(end_s) OVER (PARTITION BY host ORDER BY start_s) AS gap FROM answered
)
SELECT host, least(greatest(min(gap), $floor), $ceiling) AS delay_s
FROM gaps WHERE gap IS NOT NULL
GROUP BY host HAVING count(*) >= $min_gaps
ORDER BY host
"""


def observed_delays(root: Path, date: str, settings: CrawlSettings) -> dict[str, float]:
    """host -> delay in seconds, from the fetch logs of `date` (hosts it fetched often enough)."""
    logs = [str(p) for p in shard_files(root, "fetch_log", through=date)
            if p.parent.parent.name.removeprefix("date=") == date]
    if not logs:
        return {}
    ceiling = max(settings.max_crawl_delay_s, settings.max_adaptive_delay_s, settings.default_delay_s)
    rows = query_connection().execute(OBSERVED_DELAYS_SQL, {
        "logs": logs, "floor": settings.default_delay_s, "ceiling": ceiling, "min_gaps": MIN_GAPS}).fetchall()
    return dict(rows)
