"""The frontier's inputs split once by shard, so that each shard's frontier reads its own part
of them and not the whole crawl's: the links of the days before D by their target's shard,
the seeds and fetch logs by their URL's, and the plan for D by its URL's.

A fetch batch writes the links it found under its own shard, and their targets are on every
shard's hosts; the plan is one file for the crawl; a fetch log's shard is its batch's, which
is its hosts' only while the shard count stays the same. A shard's frontier
(frontier_step.frontiers_of_shards) over those files reads and filters all of them, and eight
shards read them eight times (at 100 million links, nearly all of the per-shard frontier's
time: bench/HISTORY.md). Split here in one pass each, a shard's inputs hold only the rows of
its own hosts' URLs, and its frontier is the same row for row: everything the frontier does
with a row looks at that row alone or at rows of the same URL (the demoted-host rule counts a
target's sources, the validators are a URL's latest answer, the plan is joined by URL) or of
the same host (https_hosts), and all of those go to the one shard of their host.
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pyarrow as pa

from ..crawler.settings import CrawlSettings
from ..crawler.url_policy.sharding import shard_key, shard_of
from ..storage.layout import columns_of
from ..storage.shared_root import connect
from .crawl_history import CrawlHistory

# DuckDB streams the rows from the files read to the shard files; beyond this it spills.
MEMORY_LIMIT = "2GB"

# The distinct hosts of the rows split (their shard is a Python rule: once a host, not a row).
HOSTS_SQL = """SELECT DISTINCT {host} AS host FROM read_parquet($files, union_by_name = true, hive_partitioning = false)
WHERE {host} IS NOT NULL"""
# Each row (every column of every file, by name; not the date and shard of its path) with its
# host's shard key; written one folder a shard (shard=sNN/), the shard column left out of the
# files. A row without a host has no shard: there is none in the crawl's files.
SPLIT_SQL = """
COPY (
    SELECT rows.*, host_shards.shard
    FROM read_parquet($files, union_by_name = true, hive_partitioning = false) AS rows
    JOIN host_shards ON rows.{host} = host_shards.host
) TO '{folder}' (FORMAT parquet, PARTITION_BY (shard), ROW_GROUP_SIZE 122880)
"""


@dataclasses.dataclass(frozen=True)
class ShardInputs:
    """Each shard's frontier inputs (frontiers_of_shards takes both mappings as they are)."""
    histories: dict[str, CrawlHistory]
    plans: dict[str, list[Path] | None]


def split_by_shard(settings: CrawlSettings, history: CrawlHistory, plan: list[Path] | None,
                   folder: Path) -> ShardInputs:
    """Each shard's history and plan: `history` with its seeds, links and fetch logs replaced
    by the rows of the shard's hosts' URLs, and the plan's rows of those URLs, written under
    `folder` (emptied first; a local folder). Every shard of the settings has its own (no link
    or fetch-log files when none of its rows is on the shard's hosts; an empty seeds file or
    plan file). A plan made per shard over the settings' shards (recrawl_plan.priorities_files)
    is already split: each shard's file is its own. A one-file plan without a host column
    (written before it had one) is every shard's whole."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    shards = settings.shard_keys()
    own_files = shard_files(plan, shards)
    split_plan = plan is not None and own_files is None and "host" in columns_of([str(p) for p in plan])
    con = connect(config={"memory_limit": MEMORY_LIMIT, "preserve_insertion_order": False,
                          "temp_directory": str(folder / ".spill")})
    try:
        # (the seeds too: every shard would otherwise judge every seed host's scope and shard)
        seeds = split_files(con, settings, [history.seeds], "host", folder / "seeds", every_shard=True)
        links = split_files(con, settings, list(history.links), "target_host", folder / "links")
        fetch_logs = split_files(con, settings, list(history.fetch_logs), "host", folder / "fetch_log")
        plans = split_files(con, settings, plan if split_plan else [], "host", folder / "plan", every_shard=True)
    finally:
        con.close()
        shutil.rmtree(folder / ".spill", ignore_errors=True)
    # (a shard's seeds are read as the glob of its files: the frontier reads one seeds path)
    histories = {shard: dataclasses.replace(history, seeds=folder / "seeds" / f"shard={shard}" / "*.parquet",
                                            links=links[shard], fetch_logs=fetch_logs[shard])
                 for shard in shards}
    if own_files is not None:
        return ShardInputs(histories, {shard: [own_files[shard]] for shard in shards})
    return ShardInputs(histories, {shard: list(plans[shard]) if split_plan else plan for shard in shards})


def shard_files(plan: list[Path] | None, shards: list[str]) -> dict[str, Path] | None:
    """A plan made per shard over these shards (each file in its shard=sNN folder, as
    layout.shard_priorities_file writes it): each shard's file; None for any other plan."""
    if plan is None or len(plan) != len(shards):
        return None
    by_shard = {p.parent.name.removeprefix("shard="): p for p in plan}
    return by_shard if sorted(by_shard) == sorted(shards) else None


def quoted(path: Path) -> str:
    return str(path).replace("'", "''")


def split_files(con, settings: CrawlSettings, files: list[Path], host: str, folder: Path,
                every_shard: bool = False) -> dict[str, tuple[Path, ...]]:
    """The rows of `files` split by the shard of their column `host`, under `folder`: each
    shard's files (none for a shard without rows; every_shard: an empty file of the same
    columns for it, so that it reads as a table without rows)."""
    if not files:
        return {shard: () for shard in settings.shard_keys()}
    names = [str(p) for p in files]
    hosts = con.execute(HOSTS_SQL.format(host=host), {"files": names}).fetchnumpy()["host"]
    con.register("host_shards", pa.table({
        "host": pa.array(hosts, pa.string()),
        "shard": pa.array([shard_key(shard_of(h, settings.shard_count)) for h in hosts], pa.string())}))
    con.execute(SPLIT_SQL.format(host=host, folder=quoted(folder)), {"files": names})
    con.unregister("host_shards")
    split = {shard: tuple(sorted((folder / f"shard={shard}").glob("*.parquet"))) for shard in settings.shard_keys()}
    for shard in [shard for shard, own in split.items() if every_shard and not own]:
        split[shard] = (folder / f"shard={shard}" / "empty.parquet",)
        split[shard][0].parent.mkdir(parents=True)
        con.execute(f"COPY (SELECT * FROM read_parquet($files, union_by_name = true, hive_partitioning = false) "
                    f"LIMIT 0) TO '{quoted(split[shard][0])}' (FORMAT parquet)", {"files": names})
    return split
