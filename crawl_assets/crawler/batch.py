"""One fetch batch from start to end: frontier rows in, WARC files and results out."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Iterable
from dataclasses import dataclass
from fnmatch import fnmatch
from pathlib import Path

from rbloom import Bloom

from .engine import FetchEngine
from .fetch_record import BatchOutput
from .workbench import FetchTask
from .settings import CrawlSettings
from .sharding import shard_of
from .trap_defences import Blocklist, TrapDefences, TrapLimits
from .warc import WarcFileWriter

SOFTWARE = "recrawl/0.1 (warcio)"


@dataclass
class BatchResult:
    output: BatchOutput
    warc_files: list[Path]


def in_scope(host: str, settings: CrawlSettings) -> bool:
    return not settings.host_scope or any(fnmatch(host, p) for p in settings.host_scope)


def run_fetch_batch(settings: CrawlSettings, shard_index: int, tasks: Iterable[FetchTask],
                    warc_dir: Path, warc_prefix: str, seen: Bloom | None = None,
                    demoted_hosts: frozenset[str] = frozenset(),
                    known_payloads: dict[str, tuple[str, str]] | None = None,
                    follow_links: bool = True) -> BatchResult:
    """Fetch the tasks (and same-shard links found on the way); WARC files go to warc_dir.

    seen: the URLs of earlier cycles; demoted_hosts: hosts whose new links are not followed;
    known_payloads: payloads archived earlier, so copies become revisit records;
    follow_links=False: fetch the tasks only (a day's recrawl plan): links and redirect
    targets are recorded, and planned from the next day on."""

    @functools.lru_cache(maxsize=65536)  # asked for every link: hosts repeat
    def follows_links_to(host: str) -> bool:
        return follow_links and in_scope(host, settings) and shard_of(host, settings.shard_count) == shard_index

    traps = TrapDefences(TrapLimits.from_settings(settings), Blocklist.read(settings.blocklist_file), demoted_hosts)
    info = {"operator": settings.user_agent, "isPartOf": warc_prefix}
    with WarcFileWriter(warc_dir, warc_prefix, SOFTWARE, info=info) as warc:
        engine = FetchEngine(settings, warc, follows_links_to, traps=traps, seen=seen,
                             known_payloads=known_payloads)
        output = asyncio.run(engine.run(tasks))
    return BatchResult(output, warc.closed_files)
