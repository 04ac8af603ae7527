"""Earlier days' files a step is about to read, checked first: a truncated or corrupt Parquet
file (a crash of another tool, a disk error, a half copy) fails the step with one sentence
naming the file, the asset partition that wrote it and what to do, before anything is written.

Only the footer is read (a few KB per file): truncation and foreign bytes show there.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from ..crawler.crawl_errors import CrawlInputError
from ..storage.shared_root import parquet_file, read_table

# The folder under the data root -> the asset that writes its files.
WRITTEN_BY = {
    "seeds_table": "seeds",
    "frontier": "frontier_snapshot",
    "fetch_log": "fetch_log",  # the fetch_batch step writes these three and warc_archive
    "links": "links",
    "dropped_urls": "dropped_urls",
    "render_decisions": "fetch_log",  # the fetch step writes it beside fetch_log
    "url_registry": "url_registry",
    "simhash_index": "simhash_index",
    "near_duplicates": "near_duplicate_clusters",
    "host_quality": "near_duplicate_clusters",
}


def partition_of(path: Path) -> tuple[str, str]:
    """(asset, partition) that wrote a file under the data root, from its hive-style folders."""
    path = Path(path) if isinstance(path, str) else path  # a Path, or a UPath under a URL root
    keys = [part.split("=", 1)[1] for part in path.parts if part.startswith(("date=", "shard="))]
    table = next((part for part in reversed(path.parts[:-1]) if "=" not in part), "?")
    return WRITTEN_BY.get(table, table), "|".join(keys) or "(unpartitioned)"


def unreadable_input(path: Path, reason: object) -> CrawlInputError:
    asset, partition = partition_of(path)
    return CrawlInputError(
        f"{path} is corrupt or truncated ({reason}): materialise {asset} {partition} again "
        f"to rewrite it, or move the file away if that partition is lost; nothing was written")


def readable_parquet(paths: Iterable[Path]) -> tuple[Path, ...]:
    """The paths, once each file's footer has been read; CrawlInputError names the first bad one."""
    checked = []
    for path in paths:
        try:
            parquet_file(path).close()
        except (OSError, ValueError) as exc:  # ArrowInvalid is a ValueError
            raise unreadable_input(path, exc) from None
        checked.append(path)
    return tuple(checked)


def read_table_checked(path: Path):
    """pq.read_table, with a corrupt file reported as a CrawlInputError naming it."""
    try:
        return read_table(path)
    except (OSError, ValueError) as exc:
        raise unreadable_input(path, exc) from None
