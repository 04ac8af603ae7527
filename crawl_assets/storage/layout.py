"""Where each asset's partitions land under the data root (hive-style folders for DuckDB).

The root is a local Path or, under a URL data root, a UPath (storage/shared_root.py): every
path here is the root's own kind of path, so a step reads and writes the same way.
A step that reads these files through DuckDB opens its connection with shared_root.connect
(the root's file system registered) and reads Parquet with shared_root.read_table; it writes
with the *_atomic functions below.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from .shared_root import query_connection, write_file_atomic


@dataclass(frozen=True)
class PartitionFile:
    """One file of a table's partitions: <table>/date=D/<name> for a daily table, and
    <table>/date=D/shard=S/<name> for one per day and shard; called with (root, date) or
    (root, date, shard) it gives that partition's path (the folder itself when `name` is "")."""

    table: str  # the table's folder under the data root
    name: str  # the file in a partition's folder; "" for the folder
    per_shard: bool = False

    def __call__(self, root: Path, date: str, shard: str | None = None) -> Path:
        if self.per_shard != (shard is not None):
            raise TypeError(f"{self.table}/{self.name} is partitioned by date"
                            + (" and shard: give both" if self.per_shard else " only: give no shard"))
        folder = root / self.table / f"date={date}"
        if shard is not None:
            folder = folder / f"shard={shard}"
        return folder / self.name if self.name else folder


# The table: every partition file a step writes, by the asset that writes it.
# frontier_snapshot[D], a file per shard
frontier_file = PartitionFile("frontier", "frontier.parquet", per_shard=True)
# ... or, for a day per shard (day_per_shard), the day's start: the first day's cut of the
# shards' frontiers, which each shard_frontier[D|S] builds in its fetch run (frontier_step.shard_frontier)
day_start_file = PartitionFile("frontier", "day_start.json")
# ... and the day's frontier inputs split by shard once, for each shard_frontier[D|S] to read its
# own (pipeline/frontier_shard_inputs.py: a folder per start, named by the day's start file)
frontier_inputs_dir = PartitionFile("frontier_inputs", "")
# fetch_job[D|shard] (its step fetch_batch): the batch's WARC files (and their indexes) in warc_dir; change evidence
# is the sitemap and feed entries with a date that the batch found.
fetch_log_file = PartitionFile("fetch_log", "fetch_log.parquet", per_shard=True)
links_file = PartitionFile("links", "links.parquet", per_shard=True)
dropped_file = PartitionFile("dropped_urls", "dropped_urls.parquet", per_shard=True)
warc_dir = PartitionFile("warc", "", per_shard=True)
change_evidence_file = PartitionFile("change_evidence", "change_evidence.parquet", per_shard=True)
# The render tier's decision per host and its evidence (when render_hosts is set), under fetch_log.
render_decisions_file = PartitionFile("render_decisions", "render_decisions.parquet", per_shard=True)
# WARC files set aside as damaged (pipeline/archive/warc_quarantine.py), each as it was, under
# quarantine/warc/date=D/shard=S/, and the records lost with them, one file per WARC file.
QUARANTINE_DIR = "quarantine"
lost_captures_dir = PartitionFile("lost_captures", "", per_shard=True)
# url_registry[D], seen_url_filter[D]
url_registry_file = PartitionFile("url_registry", "url_registry.parquet")
seen_filter_file = PartitionFile("seen_filter", "seen_urls.bloom")
# ... and one filter per shard of its hosts' URLs, the file named by the shard count it was
# split for (pipeline/seen_filter_files.py: shard_seen_filter_file)
seen_filter_shard_dir = PartitionFile("seen_filter_shards", "", per_shard=True)
# simhash_index[D], near_duplicate_clusters[D]
fingerprints_file = PartitionFile("simhash_index", "fingerprints.parquet")
near_pairs_file = PartitionFile("simhash_index", "near_pairs.parquet")
near_clusters_file = PartitionFile("near_duplicates", "clusters.parquet")
host_dup_ratio_file = PartitionFile("host_quality", "host_near_dup_ratio.parquet")
# ... and the URL aliases each host's answers taught (pipeline/alias_rules/alias_learning.py)
url_aliases_file = PartitionFile("url_aliases", "url_aliases.parquet")
# change_stats[D]. Its per-URL state is a base (every URL) or a delta (the URLs that changed
# state on day D, over the last base and the deltas after it): pipeline/change_stats/url_change_state.py.
# Beside it: the pooled prior of each URL pattern within its host (and the host's trust), and
# the sums per URL pattern within its host, which day D+1 updates.
url_state_base_file = PartitionFile("change_stats", "url_state_base.parquet")
url_state_delta_file = PartitionFile("change_stats", "url_state_delta.parquet")
pattern_priors_file = PartitionFile("change_stats", "pattern_priors.parquet")
pool_sums_file = PartitionFile("change_stats", "pool_sums.parquet")
host_changes_file = PartitionFile("change_stats", "host_changes.parquet")
# change_stats[D]'s host events: pages of one host seen changing together (host_events.py)
host_events_file = PartitionFile("change_stats", "host_events.parquet")
# recrawl_priorities[D]: every known URL's priority and the plan for the day after.
priorities_file = PartitionFile("recrawl_priorities", "url_priorities.parquet")
priority_hosts_file = PartitionFile("recrawl_priorities", "host_budgets.parquet")
# ... or, for a crawl whose priorities are planned per shard (day_per_shard), in three
# stages (pipeline/priorities/shard_priorities.py): each shard's summary of its pages
# (priority_part[D|S]), the crawl's price and plan (crawl_price[D]: the planned rows of every
# shard), and each shard's URL priorities and host budgets (shard_priorities[D|S]).
priority_part_dir = PartitionFile("priority_parts", "", per_shard=True)
crawl_price_file = PartitionFile("crawl_price", "price.json")
crawl_planned_file = PartitionFile("crawl_price", "planned_rows.parquet")
shard_priorities_file = PartitionFile("recrawl_priorities", "url_priorities.parquet", per_shard=True)
shard_priority_hosts_file = PartitionFile("recrawl_priorities", "host_budgets.parquet", per_shard=True)
# day_report[D]
day_report_dir = PartitionFile("day_report", "")


def seeds_file(root: Path) -> Path:
    """seeds: not partitioned."""
    return root / "seeds_table" / "seeds.parquet"


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
    rows = query_connection().execute(
        "DESCRIBE SELECT * FROM read_parquet($g, union_by_name = true)", {"g": files}).fetchall()
    return {row[0] for row in rows}


def glob_of(root: Path, table: str) -> str:
    """Every partition file of a hive-partitioned table, for DuckDB's read_parquet."""
    return str(root / table / "date=*" / "shard=*" / "*.parquet")


def write_parquet_atomic(table: pa.Table, path: Path) -> None:
    """Write to a temporary name and rename (or upload), so readers never see half a file."""
    write_file_atomic(path, lambda tmp: pq.write_table(table, tmp))


def write_bytes_atomic(data: bytes, path: Path) -> None:
    """Write to a temporary name and rename (or upload), so readers never see half a file."""
    write_file_atomic(path, lambda tmp: tmp.write_bytes(data))
