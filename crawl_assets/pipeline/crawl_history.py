"""What the frontier and the registry read of the crawl so far: the seed table, and the links
and fetch logs of a run of days, listed as files so that each step's inputs are explicit; and
what the fetch logs say of hosts that serve https (https_hosts)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..crawler.crawl_errors import CrawlInputError
from ..crawler.url_policy.urls import https_twin_sql
from ..crawler.vocabulary import DropReason
from ..crawler.url_policy.url_aliases import AliasRules
from ..storage.layout import columns_of, latest_before, seeds_file, shard_files, url_aliases_file
from ..storage.shared_root import query_connection, read_table
from .input_files import readable_parquet

# Which link targets the crawl knows: those of links no rule refused, and those of links
# refused only because their host was demoted for copying when at least
# settings.demoted_host_min_inlinks pages on other hosts link them (a page the rest of the web
# points at is worth its fetch whatever its host does). Both the frontier and the priorities
# step read the links through this filter.
KNOWN_LINKS_WHERE = """WHERE dropped_reason IS NULL
   OR (dropped_reason = $demoted_host AND target IN (
       SELECT target FROM read_parquet($links, union_by_name = true)
       WHERE lower(regexp_extract(source, '^[A-Za-z][A-Za-z0-9+.-]*://([^/:?#]+)', 1)) <> target_host
       GROUP BY target HAVING count(DISTINCT source) >= $demoted_min_inlinks))"""


def known_links_filter(links: list[str], settings) -> tuple[str, dict]:
    """The WHERE clause over a read_parquet($links, ...) of link rows that keeps those whose
    target the crawl knows (KNOWN_LINKS_WHERE), and its parameters besides $links; no clause
    for links files written before the trap defences (no dropped_reason)."""
    if "dropped_reason" not in columns_of(links):
        return "", {}
    return KNOWN_LINKS_WHERE, {"demoted_host": DropReason.DEMOTED_HOST,
                               "demoted_min_inlinks": settings.demoted_host_min_inlinks}


@dataclass(frozen=True)
class CrawlHistory:
    seeds: Path
    links: tuple[Path, ...] = ()
    fetch_logs: tuple[Path, ...] = ()
    url_aliases: Path | None = None  # the URL aliases to fold link targets with (alias_learning.py)


def _seeds(root: Path) -> Path:
    seeds = seeds_file(root)
    if not seeds.exists():
        raise CrawlInputError(f"{seeds} is missing: materialise `seeds` first")
    return readable_parquet([seeds])[0]


def history_before(root: Path, date: str) -> CrawlHistory:
    """The seeds, and the links and fetch logs of every day before `date` (the frontier of
    `date` reads them: links for the URLs, fetch logs for each URL's validators)."""
    return CrawlHistory(_seeds(root), readable_parquet(shard_files(root, "links", before=date)),
                        readable_parquet(shard_files(root, "fetch_log", before=date)),
                        latest_before(root, "url_aliases", date))


def history_through(root: Path, date: str) -> CrawlHistory:
    """The seeds, and the links and fetch logs of every day up to and including `date` (the
    URL registry of `date` reads them)."""
    aliases = url_aliases_file(root, date)
    return CrawlHistory(_seeds(root), readable_parquet(shard_files(root, "links", through=date)),
                        readable_parquet(shard_files(root, "fetch_log", through=date)),
                        aliases if aliases.exists() else latest_before(root, "url_aliases", date))


def register_url_folding(con, history: CrawlHistory, target: str = "target") -> str:
    """SQL of a link row's target (the SQL `target`) folded by the history's URL aliases (a
    function `fold_url` registered on `con` when there are rules; `target` itself when there
    are none)."""
    rules = AliasRules.from_table(read_table(history.url_aliases)) if history.url_aliases else AliasRules()
    if not rules:
        return target
    con.create_function("fold_url", rules.fold_urls, ["VARCHAR", "VARCHAR"], "VARCHAR", type="arrow")
    return f"fold_url({target}, target_host)"


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
