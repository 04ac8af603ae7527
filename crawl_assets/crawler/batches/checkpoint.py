"""A fetch batch's progress on disk, so a crash loses the minutes since the last checkpoint,
not the batch (docs/DESIGN.md, 4.2: never lose state).

A checkpoint folder holds:
  parts/records-NNNNNN.parquet  fetch-log rows finished since the checkpoint before (append only)
  parts/links-NNNNNN.parquet    link rows found since then
  pending-NNNNNN.parquet        every task not finished: queued, and in flight (leased)
  frontier-rest.jsonl           the frontier's URLs not yet in memory (disk_frontier.py)
  state.json                    the commit point, replaced atomically and written last: which
                                parts and pending file count, each WARC file's length as of the
                                checkpoint, each host's page count and remaining delay, the
                                drop counts, and whether the batch finished.
A crash before state.json is replaced leaves the previous checkpoint whole: files it does
not name are leftovers and are removed. Every row a checkpoint names refers to WARC bytes
that were flushed and fsynced before it, so resuming keeps exactly those bytes (recover_warc).
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from ..archive.warc import OPEN_SUFFIX
from ..crawl_errors import CrawlInputError
from ..fetching.admission import Link
from ..fetching.fetch_record import FetchRecord
from ..fetching.workbench import FetchTask
from .disk_frontier import INDEX_FILE, SPILL_FILE
from .arrow_schemas import fetch_log_table, links_table

STATE_FILE = "state.json"
PARTS_DIR = "parts"
DAMAGED_DIR = "damaged"  # WARC files shorter than a checkpoint says, kept for a person to look at
DAMAGED_SUFFIX = ".damaged"  # not "*.warc.gz": no tool takes it for a whole archive

TASK_SCHEMA = pa.schema([
    ("url", pa.string()), ("host", pa.string()), ("depth", pa.int32()), ("priority", pa.int32()),
    ("etag", pa.string()), ("last_modified", pa.string()),
    ("last_captured_at", pa.timestamp("us", tz="UTC")), ("last_payload_digest", pa.string()),
    ("attempt", pa.int32()), ("redirect_chain", pa.list_(pa.string())), ("robots_for", pa.string()),
])


@dataclass
class Checkpoint:
    """What state.json says."""

    sequence: int = 0
    finished: bool = False
    record_parts: list[str] = field(default_factory=list)
    link_parts: list[str] = field(default_factory=list)
    pending_file: str | None = None
    warc_lengths: dict[str, int] = field(default_factory=dict)  # file name -> bytes the rows use
    hosts: dict[str, dict] = field(default_factory=dict)  # host -> {"admitted": n, "wait_s": s}
    dropped: dict[str, dict[str, int]] = field(default_factory=dict)  # host -> reason -> URLs
    written_at: float = 0.0  # time.time()
    # host -> [offset, URLs left] in the frontier's rest on disk (disk_frontier.py), if used
    frontier_cursors: dict[str, list[int]] | None = None


def tasks_table(tasks: list[FetchTask]) -> pa.Table:
    """Column by column (a checkpoint of a big shard saves a few hundred thousand tasks, and
    dataclasses.asdict per task would hold up the event loop for all of them)."""
    columns = {name: [getattr(t, name) for t in tasks] for name in TASK_SCHEMA.names}
    columns["redirect_chain"] = [list(chain) for chain in columns["redirect_chain"]]
    return pa.table(columns, schema=TASK_SCHEMA)


def tasks_from(table: pa.Table) -> list[FetchTask]:
    return [FetchTask(**row | {"redirect_chain": tuple(row["redirect_chain"] or ())}) for row in table.to_pylist()]


def records_from(table: pa.Table) -> list[FetchRecord]:
    names = {f.name for f in dataclasses.fields(FetchRecord)}
    return [FetchRecord(**{k: v for k, v in row.items() if k in names}) for row in table.to_pylist()]


def _fsync_write(path: Path, write) -> None:
    """Write through a temporary name, fsync, rename: the file is whole or absent."""
    tmp = path.with_name(path.name + ".tmp")
    write(tmp)
    with open(tmp, "rb") as handle:
        os.fsync(handle.fileno())
    os.replace(tmp, path)


class BatchProgress:
    """The checkpoint folder of one fetch partition."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self.parts = self.folder / PARTS_DIR

    def load(self) -> Checkpoint | None:
        path = self.folder / STATE_FILE
        if not path.exists():
            return None
        try:
            return Checkpoint(**json.loads(path.read_text()))
        except (ValueError, TypeError) as exc:
            raise CrawlInputError(f"the fetch checkpoint {path} cannot be read ({exc}): delete the "
                                  f"folder {self.folder} to fetch the partition from its start") from None

    def write(self, previous: Checkpoint, records: list[FetchRecord], links: list[Link],
              pending: list[FetchTask], warc_lengths: dict[str, int], hosts: dict[str, dict],
              dropped: dict[str, dict[str, int]], finished: bool = False,
              frontier_cursors: dict[str, list[int]] | None = None) -> Checkpoint:
        """The next checkpoint: records and links are the rows since `previous`."""
        self.parts.mkdir(parents=True, exist_ok=True)
        sequence = previous.sequence + 1
        record_parts, link_parts = list(previous.record_parts), list(previous.link_parts)
        if records:
            name = f"records-{sequence:06d}.parquet"
            _fsync_write(self.parts / name, lambda p: pq.write_table(fetch_log_table(records), p))
            record_parts.append(name)
        if links:
            name = f"links-{sequence:06d}.parquet"
            _fsync_write(self.parts / name, lambda p: pq.write_table(links_table(links), p))
            link_parts.append(name)
        pending_file = f"pending-{sequence:06d}.parquet"
        _fsync_write(self.folder / pending_file, lambda p: pq.write_table(tasks_table(pending), p))
        checkpoint = Checkpoint(sequence, finished, record_parts, link_parts, pending_file,
                                dict(warc_lengths), hosts, dropped, time.time(), frontier_cursors)
        _fsync_write(self.folder / STATE_FILE,
                     lambda p: p.write_text(json.dumps(dataclasses.asdict(checkpoint))))
        if previous.pending_file:  # superseded by the new one
            (self.folder / previous.pending_file).unlink(missing_ok=True)
        return checkpoint

    def records(self, checkpoint: Checkpoint) -> list[FetchRecord]:
        return [r for name in checkpoint.record_parts for r in records_from(pq.read_table(self.parts / name))]

    def links(self, checkpoint: Checkpoint) -> list[Link]:
        return [Link(*row.values()) for name in checkpoint.link_parts
                for row in pq.read_table(self.parts / name).to_pylist()]

    def pending(self, checkpoint: Checkpoint) -> list[FetchTask]:
        if not checkpoint.pending_file:
            return []
        return tasks_from(pq.read_table(self.folder / checkpoint.pending_file))

    def remove_leftovers(self, checkpoint: Checkpoint | None) -> None:
        """Files of a checkpoint that was being written when the batch died."""
        named = set(checkpoint.record_parts + checkpoint.link_parts) if checkpoint else set()
        for path in self.parts.glob("*") if self.parts.exists() else ():
            if path.name not in named:
                path.unlink()
        keep = {STATE_FILE, PARTS_DIR, checkpoint.pending_file if checkpoint else None}
        if checkpoint and checkpoint.frontier_cursors is not None:
            keep |= {SPILL_FILE, INDEX_FILE}  # the frontier's rest, read on from the cursors
        for path in self.folder.glob("*") if self.folder.exists() else ():
            if path.name not in keep and path.is_file():
                path.unlink()

    def clear(self) -> None:
        """Forget the progress (a forced refetch starts over)."""
        if self.folder.exists():
            for path in sorted(self.folder.rglob("*"), reverse=True):
                path.rmdir() if path.is_dir() else path.unlink()
            self.folder.rmdir()


@dataclass(frozen=True)
class WarcRecovery:
    kept: tuple[str, ...]  # WARC files (final names) holding the checkpoint's records
    cleared: tuple[str, ...]  # unfinished files whose records no checkpoint row refers to
    damaged: tuple[str, ...]  # files shorter than the checkpoint says: their rows are fetched again


def recover_warc(warc_dir: Path, checkpoint: Checkpoint | None) -> WarcRecovery:
    """Make the partition's WARC files agree with the checkpoint before a batch resumes:
    - a file the checkpoint names is cut back to the length it had then (the bytes after it
      belong to URLs fetched again now) and, if still "<name>.open", closed by a rename;
    - any other "*.open" file holds only records of URLs the checkpoint did not finish: cleared;
    - a file shorter than the checkpoint says (truncated by something else) is moved into
      damaged/, and its rows are dropped from the resumed log (see rows_in_kept_files)."""
    lengths = checkpoint.warc_lengths if checkpoint else {}
    kept, cleared, damaged = [], [], []
    for name, length in sorted(lengths.items()):
        final, open_ = warc_dir / name, warc_dir / (name + OPEN_SUFFIX)
        path = open_ if open_.exists() else final
        if not path.exists() or path.stat().st_size < length:
            if path.exists():
                (warc_dir / DAMAGED_DIR).mkdir(exist_ok=True)
                path.rename(warc_dir / DAMAGED_DIR / (name + DAMAGED_SUFFIX))
            damaged.append(name)
            continue
        if path.stat().st_size > length:
            with open(path, "r+b") as handle:
                handle.truncate(length)
                os.fsync(handle.fileno())
        if path == open_:
            os.replace(open_, final)
        kept.append(name)
    for stray in sorted(warc_dir.glob("*.warc.gz" + OPEN_SUFFIX)) if warc_dir.exists() else ():
        stray.unlink()
        cleared.append(stray.name)
    return WarcRecovery(tuple(kept), tuple(cleared), tuple(damaged))
