"""A damaged WARC file set aside, its loss recorded, so the crawl goes on (the repair the
catalog's warc_files_whole check and `captures show` propose when no copy of the file exists
and its day lies beneath later days, so it cannot be fetched again).

Every record the file's capture index lists is read back and checked (warc_reading.py): the
records before the first damaged one stay where they are, byte for byte, in a file of the same
name (so the fetch log's offsets still point at them) and are indexed again; the damaged file
itself moves, as it was, to quarantine/warc/date=D/shard=S/ under the data root; the records
from the first damaged one on are written to lost_captures/date=D/shard=S/<file>.parquet
(the catalog's lost_captures view), each with why it is lost and whether it is still readable
in the quarantined copy (a whole record after a damaged one is, at the same offset). A missing
file loses all its records. After it, the catalog's check passes and later days close.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from ...crawler.archive.warc_index import WARC_SUFFIX, index_paths, write_index
from ...crawler.archive.warc_reading import DamagedRecord, check_member, read_member
from ...crawler.crawl_errors import CrawlInputError
from ...storage.layout import QUARANTINE_DIR, lost_captures_dir, warc_dir, write_parquet_atomic
from ...storage.shared_root import is_remote

CUT_OFF, DAMAGED, AFTER_DAMAGE, FILE_MISSING = "cut off", "damaged", "after a damaged record", "file missing"
LOST_SCHEMA = pa.schema([
    ("url", pa.string()), ("captured_at", pa.timestamp("us", tz="UTC")), ("warc_type", pa.string()),
    ("digest", pa.string()), ("filename", pa.string()), ("offset", pa.int64()), ("length", pa.int64()),
    ("reason", pa.string()),  # cut off, damaged, after a damaged record, file missing
    ("detail", pa.string()),  # what the check found (for a damaged record)
    ("quarantined_as", pa.string()),  # the damaged file where it lies now (none when it was missing)
    ("readable_there", pa.bool_()),  # a whole record the quarantined copy still holds
    ("quarantined_at", pa.timestamp("us", tz="UTC")),
])


@dataclass(frozen=True)
class Quarantined:
    path: Path  # the WARC file's place in the crawl (now holding the records kept)
    moved_to: Path | None  # where the damaged file lies now; None if it was missing
    kept: int  # records still indexed in place
    lost: int  # records listed in lost_captures

    def line(self) -> str:
        where = f"moved to {self.moved_to}" if self.moved_to else "it was missing"
        return (f"quarantined {self.path}: {where}; {self.kept} whole record(s) kept in place, {self.lost} "
                f"lost (listed in the catalog's lost_captures view once the day closes)")


def quarantine_warc(root: Path, path: Path, now: datetime | None = None) -> Quarantined:
    """Set aside the WARC file `path` of the crawl under `root` (see the module docstring);
    CrawlInputError when it is not one of the crawl's WARC files or has no damaged record."""
    path, now = Path(path).absolute(), now or datetime.now(timezone.utc)
    date, shard = where_in_crawl(root, path)
    index = index_paths(path)[1]
    if not index.exists():
        raise CrawlInputError(f"{path} has no capture index ({index.name}) beside it: nothing says which records "
                              "it held; restore it from a copy, or index it again by fetching its shard again")
    rows = sorted(pq.read_table(index).to_pylist(), key=lambda row: row["offset"])
    first_bad = first_damaged(path, rows)
    if first_bad is None:
        raise CrawlInputError(f"{path}: every one of its {len(rows)} indexed records reads whole: nothing to quarantine")
    moved_to = None
    if path.exists():
        moved_to = root / QUARANTINE_DIR / path.relative_to(root)
        moved_to.parent.mkdir(parents=True, exist_ok=True)
        os.replace(path, moved_to)
    kept, lost = rows[:first_bad], rows[first_bad:]
    if kept:
        salvage_prefix(moved_to, path, kept[-1]["offset"] + kept[-1]["length"])
        write_index(path)
    else:
        for stale in index_paths(path):
            stale.unlink(missing_ok=True)
    lost_rows = [{"url": row["url"], "captured_at": row["captured_at"], "warc_type": row["warc_type"],
                  "digest": row["digest"], "filename": path.name, "offset": row["offset"], "length": row["length"],
                  **judged(moved_to, row), "quarantined_as": str(moved_to) if moved_to else None,
                  "quarantined_at": now}
                 for row in lost]
    out = lost_captures_dir(root, date, shard) / (path.name.removesuffix(WARC_SUFFIX) + ".parquet")
    write_parquet_atomic(pa.Table.from_pylist(lost_rows, schema=LOST_SCHEMA), out)
    return Quarantined(path, moved_to, len(kept), len(lost))


def where_in_crawl(root: Path, path: Path) -> tuple[str, str]:
    """(date, shard) of one of the crawl's WARC files, from its folder warc/date=D/shard=S."""
    if is_remote(root):
        raise CrawlInputError(f"{path}: quarantine works on a local data root; under {root}, copy the file down, "
                              "or restore it from a copy")
    shard_dir, date_dir = path.parent, path.parent.parent
    if (not path.name.endswith(WARC_SUFFIX) or not shard_dir.name.startswith("shard=")
            or not date_dir.name.startswith("date=")):
        raise CrawlInputError(f"{path} is not one of the crawl's WARC files (warc/date=D/shard=S/*{WARC_SUFFIX}): "
                              "give the path a damaged-file message names")
    date, shard = date_dir.name.removeprefix("date="), shard_dir.name.removeprefix("shard=")
    if warc_dir(root, date, shard).resolve() != shard_dir.resolve():
        raise CrawlInputError(f"{path} lies outside the data root {root}: quarantine the crawl's own files only")
    return date, shard


def first_damaged(path: Path, rows: list[dict]) -> int | None:
    """The position of the first indexed record that does not read whole, or None. A missing
    file fails at its first record."""
    if not path.exists():
        return 0
    return next((n for n, row in enumerate(rows) if judged(path, row)["reason"] != AFTER_DAMAGE), None)


def judged(path: Path | None, row: dict) -> dict:
    """A lost record's reason, detail and whether `path` (the quarantined copy) holds it whole;
    AFTER_DAMAGE is a record that reads whole, lost only for lying after a damaged one."""
    if path is None or not path.exists():
        return {"reason": FILE_MISSING, "detail": None, "readable_there": False}
    try:
        check_member(path, row["offset"], read_member(path, row["offset"], row["length"]))
    except DamagedRecord as exc:
        cut = row["offset"] + row["length"] > path.stat().st_size
        return {"reason": CUT_OFF if cut else DAMAGED, "detail": exc.reason, "readable_there": False}
    return {"reason": AFTER_DAMAGE, "detail": None, "readable_there": True}


def salvage_prefix(source: Path, target: Path, end: int) -> None:
    """The first `end` bytes of `source` (whole records, offsets unchanged) as `target`."""
    tmp = target.with_name(target.name + ".tmp")
    with source.open("rb") as fh, tmp.open("wb") as out:
        left = end
        while left:
            chunk = fh.read(min(left, 1 << 20))
            assert chunk, f"{source} ended before byte {end}"
            out.write(chunk)
            left -= len(chunk)
    os.replace(tmp, target)
