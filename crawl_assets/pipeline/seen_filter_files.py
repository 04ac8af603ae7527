"""The seen-URL filter's file under the data root, local or under a URL root: rbloom saves
and loads a filter by file name only, so under a URL root the filter is built in a local
temporary folder and uploaded whole with its checksum, and read from a local copy."""

from __future__ import annotations

import tempfile
from pathlib import Path

from rbloom import Bloom

from ..crawler.crawl_errors import CrawlInputError
from ..crawler.url_policy.url_bloom import digest_file, load_filter, save_filter
from ..storage.layout import seen_filter_file, seen_filter_shard_dir, url_registry_file
from ..storage.shared_root import is_remote, local_copies, put_file


def write_seen_filter(bloom: Bloom, path: Path) -> int:
    """Save the filter and its checksum at `path`; returns the filter's size in bytes."""
    if not is_remote(path):
        save_filter(bloom, path)
        return path.stat().st_size
    with tempfile.TemporaryDirectory(prefix="recrawl-filter-") as folder:
        local = Path(folder) / path.name
        save_filter(bloom, local)
        put_file(digest_file(local), digest_file(path))  # the checksum first, as save_filter does
        put_file(local, path)
        return local.stat().st_size


def shard_seen_filter_file(root: Path, date: str, shard: str, shard_count: int) -> Path:
    """Day `date`'s filter of `shard`'s hosts' URLs, split for `shard_count` shards (a filter
    split for another count holds other hosts: it is never read for this one)."""
    return seen_filter_shard_dir(root, date, shard) / f"seen_urls_of_{shard_count}.bloom"


def write_shard_seen_filters(root: Path, date: str, filters: dict[str, Bloom], shard_count: int) -> int:
    """Save each shard's filter (registry_step.build_shard_seen_filters); their bytes together."""
    return sum(write_seen_filter(bloom, shard_seen_filter_file(root, date, shard, shard_count))
               for shard, bloom in filters.items())


def read_seen_filter(path: Path) -> Bloom:
    """The filter at `path`, checked against its checksum (CrawlInputError when it fails)."""
    with local_copies(path, digest_file(path)) as folder:
        return load_filter(folder / path.name)


def seen_filter_lost(root: Path, day: str) -> bool:
    """Day `day`'s seen-URL filter is missing or fails its checksum while the URL registry it is
    built from is there: a derived file, which the next cycle rebuilds from the registry
    (cli/cycle.py) before anything reads it."""
    path = seen_filter_file(root, day)
    if not url_registry_file(root, day).exists():
        return False
    if not path.exists():
        return True
    try:
        read_seen_filter(path)
    except CrawlInputError:
        return True
    return False
