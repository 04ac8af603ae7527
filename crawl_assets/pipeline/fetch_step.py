"""The fetch step: one shard's frontier fetched politely, into WARC files and tables.

Everything the batch knows of earlier days is an explicit input, each loaded by one named
function so an orchestrator can declare it as a dependency: the shard's frontier of the day,
the seen-URL filter of the last day before, the hosts demoted by the last near-duplicate
count before, and the payloads archived before (so copies become revisit records).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date as Date, datetime, timedelta
from pathlib import Path

import pyarrow as pa
from rbloom import Bloom

from ..crawler.batches.batch import run_fetch_batch
from ..crawler.batches.checkpoint import BatchProgress
from ..crawler.batches.arrow_schemas import dropped_table, fetch_log_table, links_table, render_decisions_table
from ..crawler.crawl_errors import CrawlInputError
from ..crawler.fetching.dated_refresh import DatedRefresh
from ..crawler.rendering.render_decision import AUTO, MEMORY_DAYS, Decision
from ..crawler.rendering.render_pass import RenderCounts
from ..crawler.settings import CrawlSettings
from ..crawler.url_policy.url_aliases import AliasRules
from ..crawler.url_policy.sharding import shard_index, shard_of
from ..crawler.url_policy.url_bloom import ShardSeenFilter
from ..crawler.vocabulary import DropReason, WarcRecordKind
from ..storage.layout import frontier_file, latest_before, shard_files
from ..storage.shared_root import is_remote, query_connection
from .change_stats.change_evidence import evidence_of_batch, listed_copies
from .crawl_history import https_hosts
from .input_files import read_table_checked, readable_parquet
from .archive.payload_index import PayloadIndex, payload_index
from .priorities.recrawl_plan import plan_path, previous_day
from .seen_filter_files import read_seen_filter, shard_seen_filter_file
from .alias_rules.alias_learning import alias_rules_before
from .archive.warc_index_step import index_warc_files

UNFOLLOWED = frozenset({DropReason.PAGE_NOFOLLOW, DropReason.NOFOLLOW_LINK})
SUPERSEDED_DIR = "superseded"  # earlier runs' WARC files of a partition, kept out of the day's glob
CHECKPOINT_DIR = "checkpoint"  # the batch's progress (crawler/batches/checkpoint.py): a rerun resumes from it
# A finished batch is not fetched again unless its run carries this tag ("true"): then it
# starts over and its earlier WARC files are moved aside (run_fetch_step).
REFETCH_TAG = "recrawl/refetch"


# -- inputs, one loader each ------------------------------------------------------------


def load_shard_frontier(root: Path, date: str, shard: str) -> pa.Table:
    path = frontier_file(root, date, shard)
    if not path.exists():
        raise CrawlInputError(f"{path} is missing: materialise frontier_snapshot for {date} first")
    return read_table_checked(path)


def seen_filter_path(root: Path, date: str) -> Path | None:
    """The newest seen-URL filter of a day before `date`: what the crawl knew before today."""
    return latest_before(root, "seen_filter", date)


def load_seen_filter(root: Path, date: str, shard: str | None = None,
                     shard_count: int | None = None) -> Bloom | ShardSeenFilter | None:
    """The newest seen filter of a day before `date`: with a shard, that day's filter of the
    shard's hosts' URLs when it was split for shard_count shards, else the whole crawl's."""
    path = seen_filter_path(root, date)
    if path is None:
        return None
    if shard is not None:
        own = shard_seen_filter_file(root, path.parent.name.removeprefix("date="), shard, shard_count)
        if own.exists():
            try:
                return ShardSeenFilter(read_seen_filter(own), shard_index(shard), shard_count)
            except CrawlInputError:  # (a damaged shard's filter: the whole crawl's answers instead)
                pass
    return read_seen_filter(path)


# Hosts whose pages were mostly copies (dedup_step.py: near-duplicates whose own links are
# alike too; a host quality file written before copies were told apart has only its
# near-duplicate ratio), judged only for hosts with enough pages.
DEMOTED_HOSTS_SQL = """
SELECT host FROM host_quality
WHERE {ratio} >= $ratio AND pages >= $min_pages
ORDER BY host
"""


def demoted_hosts(host_quality: pa.Table, settings: CrawlSettings) -> frozenset[str]:
    """The demotion rule over a host_quality table (host, pages, copy_ratio or near_duplicate_ratio)."""
    con = query_connection()
    con.register("host_quality", host_quality)
    ratio = "copy_ratio" if "copy_ratio" in host_quality.column_names else "near_duplicate_ratio"
    rows = con.execute(DEMOTED_HOSTS_SQL.format(ratio=ratio), {"ratio": settings.demote_near_dup_ratio,
                                                              "min_pages": settings.demote_min_pages}).fetchall()
    return frozenset(host for (host,) in rows)


def load_demoted_hosts(root: Path, date: str, settings: CrawlSettings) -> frozenset[str]:
    """Hosts demoted by the last near-duplicate count of a day before `date`."""
    path = latest_before(root, "host_quality", date)
    return demoted_hosts(read_table_checked(path), settings) if path else frozenset()


# Each host's latest decision taken on a sample (a row with no page sampled repeats one).
RENDER_MEMORY_SQL = """
SELECT host, arg_max(decision, date) FROM read_parquet($files, hive_partitioning = true)
WHERE pages_sampled > 0 AND decision IN ($render, $plain) GROUP BY host
"""


def load_render_memory(root: Path, date: str, settings: CrawlSettings) -> dict[str, Decision]:
    """Host -> the render decision it was last given on a sample, in the MEMORY_DAYS before
    `date` (render_decision.py); nothing unless render_hosts has "auto"."""
    if AUTO not in settings.render_hosts:
        return {}
    since = (Date.fromisoformat(date) - timedelta(days=MEMORY_DAYS)).isoformat()
    recent = [p for p in shard_files(root, "render_decisions", before=date)
              if p.parent.parent.name.removeprefix("date=") >= since]
    files = [str(p) for p in readable_parquet(recent)]
    if not files:
        return {}
    rows = query_connection().execute(RENDER_MEMORY_SQL, {"files": files, "render": Decision.RENDER,
                                                          "plain": Decision.PLAIN}).fetchall()
    return {host: Decision(decision) for host, decision in rows}


def payload_index_folder(root: Path, settings: CrawlSettings) -> Path:
    """Where this machine keeps the archived-payload index files (payload_index.py): beside the
    data under a local root, in work_dir under a URL root (a mapped file must be local)."""
    return settings.work_dir / "payload_index" if is_remote(root) else root / "payload_index"


def load_archived_payloads(root: Path, date: str, folder: Path | None = None) -> PayloadIndex:
    """Payload digest -> (URI, WARC-Date) of the first full capture of every payload archived
    before `date`, so a copy fetched today becomes a revisit record: read from the capture
    indexes of the WARC files (warc/date=D/shard=S/*.parquet), which hold every response
    archived, the render tier's subresources (scripts, JSON: not in the fetch log) included.
    An index on disk (payload_index.py), built in `folder` (default: root/payload_index) once
    a day and machine: a fetch process holds the pages of it its look-ups touch, not the archive."""
    return payload_index(root, date, folder if folder is not None else root / "payload_index")


@dataclass(frozen=True)
class FetchInputs:
    frontier: pa.Table  # the shard's frontier rows (FRONTIER_SCHEMA)
    seen: Bloom | ShardSeenFilter | None = None  # URLs known before the day; None on the first day
    demoted_hosts: frozenset[str] = frozenset()
    # payload digest -> (URI, WARC-Date) of its first capture
    archived_payloads: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    # False when the frontier follows a recrawl plan: the batch fetches the plan, no more.
    follow_links: bool = True
    # Links found join the batch while it holds fewer URLs (first_day_share); None: no limit.
    max_pages: int | None = None
    # Cheap signals the same day (crawler/fetching/dated_refresh.py): our copies of the pages
    # trusted sitemaps and feeds list (URL -> last fetched with content), and how many of
    # those they date after our copy the batch may fetch (same_day_allowance).
    listed_copies: Mapping[str, datetime] = field(default_factory=dict)
    same_day_allowance: int = 0
    # The render tier's memory: each host's last decision taken on a sample (load_render_memory).
    render_memory: Mapping[str, Decision] = field(default_factory=dict)
    # Hosts known to serve their pages over https (crawl_history.https_hosts): their http links are https.
    https_hosts: frozenset[str] = frozenset()
    # The URL aliases learnt up to the day before (alias_learning.alias_rules_before): links are folded.
    url_aliases: AliasRules | None = None


def first_day_share(root: Path, date: str, shard: str, settings: CrawlSettings) -> int:
    """The shard's part of the first day's budget, in proportion to its frontier: the day's
    frontier holds at most the budget, so each shard's part holds its own frontier, and the
    parts together hold the budget."""
    rows = {s: frontier_rows(root, date, s) for s in settings.shard_keys()}
    total = sum(rows.values())
    return settings.first_day_budget * rows[shard] // total if total else 0


def same_day_allowance(root: Path, date: str, shard: str, settings: CrawlSettings) -> int:
    """The shard's part of the daily budget the day's plan left unplanned, in proportion to
    its frontier's share of the plan: what the pages a sitemap or feed dates after our copy
    may take the same day (0 without a plan)."""
    plan = plan_path(root, date)
    if plan is None:
        return 0
    planned = query_connection().execute("SELECT count(*) FILTER (planned) FROM read_parquet($p)", {"p": [str(p) for p in plan]}).fetchone()[0]
    left = max(settings.daily_fetch_budget - planned, 0)
    return left * frontier_rows(root, date, shard) // planned if planned else 0


def shard_listed_copies(root: Path, date: str, shard: str, settings: CrawlSettings) -> dict[str, datetime]:
    """Our copies of the pages trusted sitemaps and feeds list, as change_stats of the day
    before has them, on the shard's hosts."""
    index = shard_index(shard)
    return listed_copies(root, previous_day(date), lambda host: shard_of(host, settings.shard_count) == index)


def frontier_rows(root: Path, date: str, shard: str) -> int:
    path = frontier_file(root, date, shard)
    if not path.exists():
        return 0
    return query_connection().execute("SELECT count(*) FROM read_parquet($f)", {"f": str(path)}).fetchone()[0]


def fetch_inputs(root: Path, date: str, shard: str, settings: CrawlSettings) -> FetchInputs:
    first_day = plan_path(root, date) is None
    inputs = FetchInputs(load_shard_frontier(root, date, shard),
                         load_seen_filter(root, date, shard, settings.shard_count),
                         load_demoted_hosts(root, date, settings),
                         load_archived_payloads(root, date, payload_index_folder(root, settings)),
                         follow_links=first_day,
                         max_pages=first_day_share(root, date, shard, settings) if first_day else None,
                         render_memory=load_render_memory(root, date, settings),
                         https_hosts=https_hosts(readable_parquet(shard_files(root, "fetch_log", before=date))),
                         url_aliases=alias_rules_before(root, date))
    allowance = same_day_allowance(root, date, shard, settings)
    if allowance <= 0:
        return inputs
    return dataclasses.replace(inputs, listed_copies=shard_listed_copies(root, date, shard, settings),
                               same_day_allowance=allowance)


# -- the step -------------------------------------------------------------------------------


@dataclass(frozen=True)
class FetchCounts:
    frontier_urls: int
    fetched: int  # fetch-log rows: URLs answered, refused (robots.txt, a trap defence) or failed
    discovered_in_batch: int  # fetched URLs that were not in the frontier (same-shard links)
    hosts: int
    links: int
    new_links: int
    revisit_records: int
    demoted_hosts: int
    urls_dropped: int
    bytes: int
    warc_bytes: int
    status_classes: Mapping[str, int]
    http_statuses: Mapping[str, int]
    dropped_by_reason: Mapping[str, Mapping[str, int]]  # reason -> {host: URLs}, top 20 hosts
    # Pages' own signals (crawler/content/page_signals.py): pages fetched and archived but marked
    # noindex, pages whose links were all left unfollowed, and link rows not followed by reason.
    noindex_pages: int = 0
    nofollow_pages: int = 0
    unfollowed_links: Mapping[str, int] = field(default_factory=dict)  # page_nofollow, nofollow_link
    # The render tier (crawler/rendering/render_pass.py): pages rendered, pages that failed to,
    # pages the render budget left unrendered, requests answered for the browser, and its
    # requests refused by reason (robots, ...).
    rendered_pages: int = 0
    render_errors: int = 0
    left_unrendered: int = 0
    browser_requests: int = 0
    subresource_requests: int = 0  # of the browser's requests, for subresources (robots.txt not)
    subresources_from_cache: int = 0  # served again from the batch's cache, no request made
    subresources_revalidated: int = 0  # asked for conditionally, answered 304
    refused_browser_requests: Mapping[str, int] = field(default_factory=dict)
    # Pages a trusted sitemap or feed read in the batch dated after our copy, fetched the same day.
    listed_changes_same_day: int = 0
    answered: int = 0  # of the rows, requests that got an HTTP answer (any status)


@dataclass(frozen=True)
class FetchResult:
    fetch_log: pa.Table
    links: pa.Table
    dropped: pa.Table
    warc_files: tuple[Path, ...]
    superseded: tuple[Path, ...]  # WARC files of earlier runs of the partition, moved aside
    counts: FetchCounts
    reused: bool = False  # the partition's batch had finished before: nothing was fetched
    change_evidence: pa.Table | None = None  # sitemap and feed entries with a date (CHANGE_EVIDENCE_SCHEMA)
    # The render tier's decision per host, with its evidence (RENDER_DECISIONS_SCHEMA); None when the
    # batch had no render tier (render_hosts empty) or was not fetched again (reused).
    render_decisions: pa.Table | None = None


def run_fetch_step(settings: CrawlSettings, shard: str, inputs: FetchInputs, warc_dir: Path,
                   warc_prefix: str, refetch: bool = False) -> FetchResult:
    """Fetch the shard's frontier (and same-shard links found on the way) into warc_dir.

    A batch that was cut short resumes from its checkpoint; one that finished is not fetched
    again (the same result comes back, and writing it again changes nothing) unless
    `refetch`: then a finished batch starts over, and its earlier WARC files are moved aside
    at the end."""
    previous = sorted(warc_dir.glob("*.warc.gz"))
    progress = BatchProgress(warc_dir / CHECKPOINT_DIR)
    last = progress.load()
    if refetch and last is not None and last.finished:  # one cut short resumes (a retry of a refetch too)
        progress.clear()
    # The frontier streams from disk a few URLs per host at a time (crawler/batches/disk_frontier.py).
    dated = DatedRefresh(inputs.listed_copies, inputs.same_day_allowance) if inputs.listed_copies else None
    batch = run_fetch_batch(settings, shard_index(shard), [], warc_dir, warc_prefix, seen=inputs.seen,
                            known_payloads=inputs.archived_payloads,
                            demoted_hosts=inputs.demoted_hosts, follow_links=inputs.follow_links,
                            progress=progress, frontier=inputs.frontier, max_pages=inputs.max_pages,
                            dated_refresh=dated, render_memory=inputs.render_memory, https_hosts=inputs.https_hosts,
                            aliases=inputs.url_aliases)
    # The new fetch log points at the new WARC files only. Archives of earlier runs of this
    # partition are kept (nothing crawled is lost) but moved aside, out of the day's glob.
    superseded = []
    for old in previous:
        if old not in batch.warc_files:
            (warc_dir / SUPERSEDED_DIR).mkdir(exist_ok=True)
            superseded.append(old.rename(warc_dir / SUPERSEDED_DIR / old.name))
    index_warc_files(batch.warc_files, warc_dir)  # CDXJ + Parquet beside each closed WARC file

    output = batch.output
    fetch_log, links, dropped = (fetch_log_table(output.records), links_table(output.links),
                                 dropped_table(output.dropped))
    evidence = evidence_of_batch(fetch_log, warc_dir, settings.max_body_bytes)
    frontier_urls = set(inputs.frontier.column("url").to_pylist())
    counts = FetchCounts(
        frontier_urls=inputs.frontier.num_rows,
        fetched=fetch_log.num_rows,
        answered=sum(r.status is not None for r in output.records),
        discovered_in_batch=sum(r.url not in frontier_urls for r in output.records),
        hosts=len({r.host for r in output.records}),
        links=links.num_rows,
        new_links=sum(1 for link in output.links if link[4]),
        revisit_records=sum(r.warc_type == WarcRecordKind.REVISIT for r in output.records),
        demoted_hosts=len(inputs.demoted_hosts),
        urls_dropped=sum(dropped.column("urls").to_pylist()),
        bytes=sum(r.bytes for r in output.records),
        warc_bytes=sum(p.stat().st_size for p in batch.warc_files),
        status_classes=dict(Counter(r.status_class for r in output.records)),
        http_statuses=dict(Counter(str(r.status) for r in output.records if r.status is not None)),
        dropped_by_reason=top_hosts_by_reason(output.dropped),
        noindex_pages=sum(r.noindex for r in output.records),
        nofollow_pages=sum(r.nofollow for r in output.records),
        unfollowed_links=dict(Counter(link.dropped_reason for link in output.links
                                      if link.dropped_reason in UNFOLLOWED)),
        **render_counts(batch.render),
        listed_changes_same_day=dated.taken if dated is not None else 0,
    )
    reused = batch.resumed_from is not None and batch.resumed_from.checkpoint.finished
    if reused:  # the counts say what this run did: nothing (the tables are the earlier run's)
        counts = FetchCounts(frontier_urls=counts.frontier_urls, demoted_hosts=counts.demoted_hosts,
                             **dict.fromkeys(ACTIVITY_COUNTS, 0), status_classes={}, http_statuses={},
                             dropped_by_reason={}, unfollowed_links={})
    decisions = render_decisions_table(batch.render.hosts) if batch.render is not None else None
    return FetchResult(fetch_log, links, dropped, tuple(batch.warc_files), tuple(superseded), counts, reused,
                       evidence, decisions)


ACTIVITY_COUNTS = ("fetched", "answered", "discovered_in_batch", "hosts", "links", "new_links", "revisit_records",
                   "urls_dropped", "bytes", "warc_bytes", "noindex_pages", "nofollow_pages")


def nothing_fetched(result: FetchResult, date: str, shard: str) -> str | None:
    """What a run that fetched nothing says (in its metadata and its log), or None."""
    if not result.reused:
        return None
    return (f"nothing fetched: the batch of {date}|{shard} had finished in an earlier run, and its fetch log "
            f"({result.fetch_log.num_rows:,} rows), WARC files ({len(result.warc_files)}) and tables stand as that run "
            f"wrote them; to fetch the shard again, run it with the tag {REFETCH_TAG}=true "
            f"(python -m crawl_assets.cli.cycle --date {date} --shards {shard} --refetch)")


def render_counts(render: RenderCounts | None) -> dict:
    """The render tier's part of FetchCounts (zeros when it rendered nothing)."""
    if render is None:
        return {}
    return {"rendered_pages": render.rendered_pages, "render_errors": render.render_errors,
            "left_unrendered": render.left_unrendered,
            "browser_requests": render.browser_requests, "subresource_requests": render.subresource_requests,
            "subresources_from_cache": render.subresources_from_cache,
            "subresources_revalidated": render.subresources_revalidated,
            "refused_browser_requests": dict(render.refused_requests)}


def top_hosts_by_reason(dropped: Mapping[str, Mapping[str, int]], top: int = 20) -> dict[str, dict[str, int]]:
    """reason -> {host: URLs dropped}, the `top` hosts that lost the most first."""
    table: dict[str, dict[str, int]] = {}
    for host, reasons in dropped.items():
        for reason, count in reasons.items():
            table.setdefault(reason, {})[host] = count
    return {r: dict(sorted(h.items(), key=lambda kv: -kv[1])[:top]) for r, h in sorted(table.items())}
