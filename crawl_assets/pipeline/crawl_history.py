"""What the frontier and the registry read of the crawl so far: the seed table, and the links
and fetch logs of a run of days, listed as files so that each step's inputs are explicit; and
what the fetch logs say of hosts that serve https (https_hosts)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..crawler.crawl_errors import CrawlInputError
from ..crawler.url_policy.urls import https_twin_sql
from ..storage.layout import columns_of, seeds_file, shard_files
from ..storage.shared_root import query_connection
from .input_files import readable_parquet


@dataclass(frozen=True)
class CrawlHistory:
    seeds: Path
    links: tuple[Path, ...] = ()
    fetch_logs: tuple[Path, ...] = ()


def _seeds(root: Path) -> Path:
    seeds = seeds_file(root)
    if not seeds.exists():
        raise CrawlInputError(f"{seeds} is missing: materialise `seeds` first")
    return readable_parquet([seeds])[0]


def history_before(root: Path, date: str) -> CrawlHistory:
    """The seeds, and the links and fetch logs of every day before `date` (the frontier of
    `date` reads them: links for the URLs, fetch logs for each URL's validators)."""
    return CrawlHistory(_seeds(root), readable_parquet(shard_files(root, "links", before=date)),
                        readable_parquet(shard_files(root, "fetch_log", before=date)))


def history_through(root: Path, date: str) -> CrawlHistory:
    """The seeds, and the links and fetch logs of every day up to and including `date` (the
    URL registry of `date` reads them)."""
    return CrawlHistory(_seeds(root), readable_parquet(shard_files(root, "links", through=date)),
                        readable_parquet(shard_files(root, "fetch_log", through=date)))


# Each host's latest word on https (crawler/url_policy/https_hosts.py): an answer's HSTS (true,
# or false for max-age=0), or an http URL that redirected to its https twin (true).
HTTPS_HOSTS_SQL = """
SELECT host FROM read_parquet($fetch_logs, union_by_name = true)
WHERE {hsts} IS NOT NULL OR redirect_to = {twin}
GROUP BY host HAVING arg_max(coalesce({hsts}, true), fetched_at)
ORDER BY host
"""


def https_hosts(fetch_logs: tuple[Path, ...] | list[Path]) -> frozenset[str]:
    """The hosts the crawl knows to serve their pages over https, by these fetch logs (a URL of
    theirs is taken as https: crawler/url_policy/urls.py, upgrade_scheme)."""
    if not fetch_logs:
        return frozenset()
    files = [str(p) for p in fetch_logs]
    # Logs written before the hsts column have none (columns are only added: the newest tells).
    hsts = "hsts" if "hsts" in columns_of([max(files)]) else "NULL::BOOLEAN"
    rows = query_connection().execute(HTTPS_HOSTS_SQL.format(hsts=hsts, twin=https_twin_sql("url")),
                                      {"fetch_logs": files}).fetchall()
    return frozenset(host for (host,) in rows)
