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

A day per shard in Dagster splits them at the day's start (start_day_split, in
frontier_snapshot[D]), and each shard's step reads its own part (shard_day_inputs, in
shard_frontier[D|S]).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import tempfile
import uuid
from pathlib import Path

import pyarrow as pa

from ..crawler.crawl_errors import CrawlInputError
from ..crawler.settings import CrawlSettings
from ..crawler.url_policy.sharding import shard_key, shard_of
from ..storage.layout import columns_of, day_start_file, frontier_inputs_dir, write_bytes_atomic
from ..storage.shared_root import connect, is_remote, make_local_folder, publish_folder, relative_under
from .crawl_history import CrawlHistory, history_before
from .frontier_step import cut_json, first_day_cut_of_shards
from .priorities.recrawl_plan import plan_path

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


# A day per shard: the day's start (frontier_snapshot[D]) splits the inputs once, in a folder of
# its own under frontier_inputs/date=D/ (SPLIT_PREFIX and a new name each start), and the day's
# start file, written after the folder is whole, names it and each shard's files in it. A start
# that crashed half-way leaves a folder no start file names, which the next start removes.
SPLIT_PREFIX = "split-"


def start_day_split(settings: CrawlSettings, history: CrawlHistory, plan: list[Path] | None,
                    date: str) -> dict:
    """Split the day's inputs by shard (split_by_shard), find the first day's cut (no plan) from
    each shard's own inputs, and write the day's start file naming both; the splits of earlier
    starts and days are then removed. Returns what the start file holds."""
    root = settings.data_root
    folder = frontier_inputs_dir(root, date) / f"{SPLIT_PREFIX}{uuid.uuid4().hex[:12]}"
    split = write_split(settings, history, plan, folder)
    cut = None if plan else first_day_cut_of_shards(settings, split.histories, settings.shard_keys())
    manifest = {"folder": str(relative_under(root, folder)), "url_aliases": relative(root, history.url_aliases),
                "shards": {shard: {"seeds": relative(root, own.seeds),
                                   "links": [relative(root, p) for p in own.links],
                                   "fetch_logs": [relative(root, p) for p in own.fetch_logs],
                                   "plan": None if split.plans[shard] is None
                                   else [relative(root, p) for p in split.plans[shard]]}
                           for shard, own in split.histories.items()}}
    text = cut_json(cut, split=manifest)
    write_bytes_atomic(text, day_start_file(root, date))
    remove_other_splits(root, date, folder)
    return json.loads(text)


def write_split(settings: CrawlSettings, history: CrawlHistory, plan: list[Path] | None,
                folder: Path) -> ShardInputs:
    """split_by_shard into `folder`, which appears whole or not at all: written under a temporary
    name and renamed; under a URL root, written in a local temporary folder (under work_dir) and
    uploaded file by file (the start file, written after, is what makes it the day's)."""
    if is_remote(folder):
        with tempfile.TemporaryDirectory(prefix="recrawl-split-", dir=make_local_folder(settings.work_dir)) as tmp:
            local = Path(tmp) / folder.name
            split = split_by_shard(settings, history, plan, local)
            publish_folder(local, folder)
            return moved(split, local, folder)
    partial = folder.with_name(folder.name + ".tmp")
    split = split_by_shard(settings, history, plan, partial)
    os.rename(partial, folder)
    return moved(split, partial, folder)


def moved(split: ShardInputs, old: Path, new: Path) -> ShardInputs:
    """`split` with its paths under `old` (its files and globs) under `new`."""
    def at(path):
        return new.joinpath(*path.relative_to(old).parts) if path is not None and path.is_relative_to(old) else path

    return ShardInputs({shard: dataclasses.replace(own, seeds=at(own.seeds), links=tuple(map(at, own.links)),
                                                   fetch_logs=tuple(map(at, own.fetch_logs)))
                        for shard, own in split.histories.items()},
                       {shard: None if files is None else [at(p) for p in files] for shard, files in split.plans.items()})


def relative(root: Path, path: Path | None) -> str | None:
    return None if path is None else str(relative_under(root, path))


def remove_other_splits(root: Path, date: str, keep: Path) -> None:
    """Every split of earlier days, and of the day but `keep` (a crashed or earlier start's):
    a day's shards read only the split its start file names, and a day starts once the day
    before has closed (day_order.wait_for_previous_day)."""
    for day in frontier_inputs_dir(root, date).parent.glob("date=*"):
        day_of = day.name.removeprefix("date=")
        for old in [day] if day_of < date else [p for p in day.iterdir() if p.name != keep.name] if day_of == date else []:
            if is_remote(old):
                old.fs.rm(old.path, recursive=True)
            else:
                shutil.rmtree(old, ignore_errors=True)


def shard_day_inputs(root: Path, date: str, shard: str) -> tuple[CrawlHistory, list[Path] | None, str | None]:
    """A shard's frontier inputs of the day as the day's start file names them: its own part of
    the split (and the split's folder); the crawl's whole inputs for a day started before the
    split was written (no folder)."""
    start = json.loads(day_start_file(root, date).read_bytes())
    if "split" not in start:
        return history_before(root, date), plan_path(root, date), None
    split, own = start["split"], start["split"]["shards"][shard]
    if not (root / split["folder"]).exists():
        raise CrawlInputError(f"{root / split['folder']}, the frontier inputs of {date} split by shard, is gone: "
                              f"materialise frontier_snapshot for {date} again (it splits them)")
    history = CrawlHistory(root / own["seeds"], tuple(root / p for p in own["links"]),
                           tuple(root / p for p in own["fetch_logs"]),
                           None if split["url_aliases"] is None else root / split["url_aliases"])
    return history, None if own["plan"] is None else [root / p for p in own["plan"]], split["folder"]
