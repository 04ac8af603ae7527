"""One fetch batch from start to end: frontier rows in, WARC files and results out."""

from __future__ import annotations

import functools
from collections import ChainMap
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fnmatch import fnmatch
from pathlib import Path

import pyarrow as pa
from rbloom import Bloom

from ..archive.warc import WarcFileWriter
from ..fetching.engine import FetchEngine
from ..fetching.fetch_record import BatchOutput
from ..fetching.workbench import FetchTask
from ..rendering.render_decision import Decision
from ..rendering.render_pass import RenderCounts, run_with_render
from ..settings import CrawlSettings
from ..url_policy.sharding import shard_of
from ..url_policy.trap_defences import Blocklist, TrapDefences, TrapLimits
from ..url_policy.url_aliases import AliasRules
from ..url_policy.url_bloom import ShardSeenFilter
from .checkpoint import BatchProgress
from .progress import Checkpointer, FrontierFeeder, ResumePoint, output_of, restore, resume_point

SOFTWARE = "recrawl/0.1 (warcio)"


@dataclass
class BatchResult:
    output: BatchOutput
    warc_files: list[Path]
    resumed_from: ResumePoint | None = None  # the checkpoint it started from, with progress=
    render: RenderCounts | None = None  # what the render tier did (None: no host of it)


def in_scope(host: str, settings: CrawlSettings) -> bool:
    return not settings.host_scope or any(fnmatch(host, p) for p in settings.host_scope)


def run_fetch_batch(settings: CrawlSettings, shard_index: int, tasks: Iterable[FetchTask],
                    warc_dir: Path, warc_prefix: str, seen: Bloom | ShardSeenFilter | None = None,
                    demoted_hosts: frozenset[str] = frozenset(),
                    known_payloads: Mapping[str, tuple[str, str]] | None = None,
                    follow_links: bool = True, progress: BatchProgress | None = None,
                    frontier: pa.Table | Path | None = None, max_pages: int | None = None,
                    dated_refresh: DatedRefresh | None = None,
                    render_memory: Mapping[str, Decision] | None = None,
                    https_hosts: Iterable[str] = (),
                    aliases: AliasRules | None = None) -> BatchResult:
    """Fetch the tasks (and same-shard links found on the way); WARC files go to warc_dir.

    seen: the URLs of earlier cycles (or of the shard's hosts: url_bloom.ShardSeenFilter);
    demoted_hosts: hosts whose new links are not followed;
    known_payloads: payloads archived earlier, so copies become revisit records;
    follow_links=False: fetch the tasks only (a day's recrawl plan): links and redirect
    targets are recorded, and planned from the next day on. max_pages: links found join the
    batch while it holds fewer URLs (the first day's share of its budget; None: no limit).
    progress: where the batch checkpoints (progress.py); an earlier attempt's checkpoint
    there is resumed, and a finished one is the result (nothing is fetched again). A crash or
    BatchStopped leaves the open WARC file for the resume.
    frontier (with progress, instead of tasks): the shard's frontier as a table or Parquet file,
    streamed from disk a few URLs per host at a time (disk_frontier.py), so memory holds only
    the head of each host's queue. dated_refresh: the pages a sitemap or feed read in the batch
    dates after our copy, fetched the same day within an allowance (fetching/dated_refresh.py).
    render_memory: each host's last render decision taken on a sample (rendering/render_decision.py).
    https_hosts: hosts known to serve https (url_policy/https_hosts.py): their http links are https.
    aliases: the URL aliases learnt so far; each link found is folded by them (url_policy/url_aliases.py)."""

    @functools.lru_cache(maxsize=65536)  # asked for every link: hosts repeat
    def of_this_shard(host: str) -> bool:
        return shard_of(host, settings.shard_count) == shard_index

    @functools.lru_cache(maxsize=65536)
    def follows_links_to(host: str) -> bool:
        return follow_links and in_scope(host, settings) and of_this_shard(host)

    traps = TrapDefences(TrapLimits.from_settings(settings), Blocklist.read(settings.blocklist_file), demoted_hosts)
    info = {"operator": settings.user_agent, "isPartOf": warc_prefix}
    point = resume_point(progress, warc_dir, list(tasks) if frontier is None else frontier) if progress else None
    if point is not None and point.checkpoint.finished:  # done before: the same output, nothing fetched
        return BatchResult(output_of(progress, point.checkpoint), [warc_dir / n for n in point.warc.kept], point)
    # What a resumed batch archived before its crash, over what earlier days did (read, not copied).
    payloads = ChainMap(point.archived_payloads(), known_payloads or {}) if point else known_payloads
    with WarcFileWriter(warc_dir, warc_prefix, SOFTWARE, info=info) as warc:
        engine = FetchEngine(settings, warc, follows_links_to, traps=traps, seen=seen,
                             known_payloads=payloads, max_pages=max_pages, dated_refresh=dated_refresh,
                             https_hosts=https_hosts, aliases=aliases, own_hosts=of_this_shard)
        scope = functools.partial(in_scope, settings=settings)
        if point is None:
            render = run_with_render(engine, settings, tasks, scope, render_memory)
            return BatchResult(engine.output, warc.close(), render=render)
        warc.adopt([warc_dir / name for name in point.warc.kept])
        restore(engine, point)
        checkpointer = Checkpointer(progress, engine, warc, point)
        if point.disk is not None:
            feeder = FrontierFeeder(point.disk, engine)
            checkpointer.feeder = feeder
            engine.top_up = feeder.top_up
            feeder.start()
        try:
            render = run_with_render(engine, settings, point.tasks, scope, render_memory, on_tick=checkpointer.tick,
                                     tick_s=settings.checkpoint_interval_s)
        except BaseException:
            warc.abandon()  # like a kill: the last checkpoint is the state to resume from
            raise
        finally:
            if point.disk is not None:
                point.disk.close()
    output = checkpointer.finish()
    return BatchResult(output, warc.closed_files, point, render)
