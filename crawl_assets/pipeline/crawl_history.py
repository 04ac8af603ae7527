"""What the frontier and the registry read of the crawl so far: the seed table, and the links
and fetch logs of a run of days, listed as files so that each step's inputs are explicit."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..crawler.crawl_errors import CrawlInputError
from ..storage.layout import seeds_file, shard_files
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
