"""Where each asset's partitions land under the data root (hive-style folders for DuckDB).

The root is a local Path or, under a URL data root, a UPath (storage/shared_root.py): every
function here returns the root's own kind of path, so a step reads and writes the same way.
A step that reads these files through DuckDB opens its connection with shared_root.connect
(the root's file system registered) and reads Parquet with shared_root.read_table; it writes
with the *_atomic functions below.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from .shared_root import connect, write_file_atomic


def seeds_file(root: Path) -> Path:
    return root / "seeds_table" / "seeds.parquet"


def frontier_file(root: Path, date: str, shard: str) -> Path:
    return root / "frontier" / f"date={date}" / f"shard={shard}" / "frontier.parquet"


def fetch_log_file(root: Path, date: str, shard: str) -> Path:
    return root / "fetch_log" / f"date={date}" / f"shard={shard}" / "fetch_log.parquet"


def links_file(root: Path, date: str, shard: str) -> Path:
    return root / "links" / f"date={date}" / f"shard={shard}" / "links.parquet"


def change_evidence_file(root: Path, date: str, shard: str) -> Path:
    """Sitemap and feed entries with a date, found by fetch_batch[date|shard]."""
    return root / "change_evidence" / f"date={date}" / f"shard={shard}" / "change_evidence.parquet"


def warc_dir(root: Path, date: str, shard: str) -> Path:
    return root / "warc" / f"date={date}" / f"shard={shard}"


def url_registry_file(root: Path, date: str) -> Path:
    return root / "url_registry" / f"date={date}" / "url_registry.parquet"


def seen_filter_file(root: Path, date: str) -> Path:
    return root / "seen_filter" / f"date={date}" / "seen_urls.bloom"


def dropped_file(root: Path, date: str, shard: str) -> Path:
    return root / "dropped_urls" / f"date={date}" / f"shard={shard}" / "dropped_urls.parquet"


def fingerprints_file(root: Path, date: str) -> Path:
    return root / "simhash_index" / f"date={date}" / "fingerprints.parquet"


def near_pairs_file(root: Path, date: str) -> Path:
    return root / "simhash_index" / f"date={date}" / "near_pairs.parquet"


def near_clusters_file(root: Path, date: str) -> Path:
    return root / "near_duplicates" / f"date={date}" / "clusters.parquet"


def host_dup_ratio_file(root: Path, date: str) -> Path:
    return root / "host_quality" / f"date={date}" / "host_near_dup_ratio.parquet"


# change_stats[D]'s per-URL state is a base (every URL) or a delta (the URLs that changed
# state on day D, over the last base and the deltas after it): pipeline/change_stats/url_change_state.py.
def url_state_base_file(root: Path, date: str) -> Path:
    return root / "change_stats" / f"date={date}" / "url_state_base.parquet"


def url_state_delta_file(root: Path, date: str) -> Path:
    return root / "change_stats" / f"date={date}" / "url_state_delta.parquet"


def pattern_priors_file(root: Path, date: str) -> Path:
    """change_stats[D]'s pooled prior of each URL pattern within its host (and the host's trust)."""
    return root / "change_stats" / f"date={date}" / "pattern_priors.parquet"


def pool_sums_file(root: Path, date: str) -> Path:
    """change_stats[D]'s sums per URL pattern within its host, which day D+1 updates."""
    return root / "change_stats" / f"date={date}" / "pool_sums.parquet"


def host_changes_file(root: Path, date: str) -> Path:
    return root / "change_stats" / f"date={date}" / "host_changes.parquet"


def priorities_file(root: Path, date: str) -> Path:
    """recrawl_priorities[date]: every known URL's priority and the plan for the day after."""
    return root / "recrawl_priorities" / f"date={date}" / "url_priorities.parquet"


def priority_hosts_file(root: Path, date: str) -> Path:
    return root / "recrawl_priorities" / f"date={date}" / "host_budgets.parquet"


def latest_before(root: Path, table: str, date: str) -> Path | None:
    """The newest daily file of `table` from a day before `date` (ISO dates sort as text)."""
    days = sorted(p for p in (root / table).glob("date=*/*")
                  if p.parent.name[5:] < date and not p.name.endswith((".tmp", ".sha256")))
    return days[-1] if days else None


def has_partition_files(root: Path, table: str) -> bool:
    return any((root / table).glob("date=*/shard=*/*.parquet"))


def shard_files(root: Path, table: str, *, before: str | None = None,
                through: str | None = None) -> tuple[Path, ...]:
    """The files of a date x shard table of the days before `before` (or up to and including
    `through`), in date and shard order: what a step reads of earlier days, listed explicitly."""
    assert (before is None) != (through is None), "give exactly one of before= and through="
    files = []
    for path in sorted((root / table).glob("date=*/shard=*/*.parquet")):
        day = path.parent.parent.name.removeprefix("date=")
        if (before is not None and day < before) or (through is not None and day <= through):
            files.append(path)
    return tuple(files)


def columns_of(files: str | list[str]) -> set[str]:
    """Column names across every file of a glob or list: files written by older versions lack some."""
    rows = connect().execute(
        "DESCRIBE SELECT * FROM read_parquet($g, union_by_name = true)", {"g": files}).fetchall()
    return {row[0] for row in rows}


def glob_of(root: Path, table: str) -> str:
    """Every partition file of a hive-partitioned table, for DuckDB's read_parquet."""
    return str(root / table / "date=*" / "shard=*" / "*.parquet")


def write_parquet_atomic(table: pa.Table, path: Path) -> None:
    """Write to a temporary name and rename (or upload), so readers never see half a file."""
    write_file_atomic(path, lambda tmp: pq.write_table(table, tmp))


def day_report_dir(root: Path, date: str) -> Path:
    return root / "day_report" / f"date={date}"


def write_bytes_atomic(data: bytes, path: Path) -> None:
    """Write to a temporary name and rename (or upload), so readers never see half a file."""
    write_file_atomic(path, lambda tmp: tmp.write_bytes(data))
