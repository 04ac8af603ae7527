"""The archived payloads a fetch batch looks up, on disk: payload digest -> (URI, WARC-Date)
of the first full capture of every payload archived before a day, so a copy fetched that day
becomes a revisit record that points at it.

A dict of every payload took 160-300 bytes an entry in every fetch process (1.6-3 GB at 10
million payloads). Instead the look-up reads files with pread, so the process holds none of
them (the kernel's page cache does, shared by every process of the machine):
- `keys`: the MD5 of each digest string (16 bytes: fixed, whatever the digest's algorithm),
  sorted; every SPARSE-th key is held in memory, so a look-up reads one block of keys;
- `offsets` and `heap`: row i's "digest TAB uri TAB date" is heap[offsets[i]:offsets[i + 1]]
  (neither a normalised URL nor a digest nor a WARC-Date holds a tab).
A miss reads one block; a hit three small reads more. Beside them `rows.parquet`, the same rows,
which the next day's build reads.

The index for day D (`before=D/`, in a folder on the machine's own disk) is built once and
shared by the day's batches on that machine, under a lock: from the newest earlier index there
plus the capture indexes of the days it does not cover (the first capture of a digest is the
earliest, so an older index's rows stand), or from all capture indexes (the WARC files'
warc/date=D/shard=S/*.parquet, which hold every response archived) when there is none.
DuckDB builds it with a memory limit, spilling beyond it, and the rows stream out a batch at a
time, so building holds no more than that either.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import socket
from collections.abc import Iterator, Mapping
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ...crawler.vocabulary import WarcRecordKind
from ...storage.layout import shard_files
from ...storage.shared_root import connect
from ..input_files import readable_parquet

BUILD_MEMORY_LIMIT = "256MB"  # DuckDB's, while building: the fetch process stays small
BATCH_ROWS = 1 << 16  # rows streamed out of DuckDB at a time
SPARSE = 256  # every SPARSE-th key is held in memory: a look-up reads 4 KB of keys
KEEP = 2  # the newest indexes kept in the folder; older ones are deleted after a build
KEY_BYTES = 16
SCHEMA = pa.schema([("key", pa.binary(KEY_BYTES)), ("digest", pa.string()), ("uri", pa.string()),
                    ("date", pa.string())])

# The first full capture of each payload (a complete 2xx answer: the fetch engine and the
# render tier write no other as a revisit's original) in the capture indexes given, its key the
# MD5 of the digest; WARC-Date as warc_date() writes it.
NEW_FIRST_CAPTURES = """
SELECT unhex(md5(digest)) AS key, digest, arg_min(url, captured_at) AS uri,
       strftime(min(captured_at), '%Y-%m-%dT%H:%M:%S.%fZ') AS date
FROM read_parquet($indexes, union_by_name = true)
WHERE warc_type = $response AND digest IS NOT NULL AND status BETWEEN 200 AND 299
GROUP BY digest
"""
# With an earlier index's rows: those stand, the new ones add the digests it lacks; key order.
MERGED = """
WITH new AS ({new})
SELECT key, digest, uri, date FROM read_parquet($earlier)
UNION ALL
SELECT key, digest, uri, date FROM new ANTI JOIN (SELECT key FROM read_parquet($earlier)) USING (key)
ORDER BY key
"""


def digest_key(digest: str) -> bytes:
    return hashlib.md5(digest.encode("utf-8", "surrogatepass")).digest()


class PayloadIndex(Mapping):
    """An index folder read with pread: digest -> (URI, WARC-Date). No folder: an empty index."""

    def __init__(self, folder: Path | None = None):
        self.folder = folder
        self._keys = self._offsets = self._heap = -1
        self._rows = 0
        self._sparse = np.zeros(0, dtype=f"S{KEY_BYTES}")
        if folder is not None:
            self._keys = os.open(folder / "keys", os.O_RDONLY)
            self._offsets = os.open(folder / "offsets", os.O_RDONLY)
            self._heap = os.open(folder / "heap", os.O_RDONLY)
            self._rows = os.fstat(self._keys).st_size // KEY_BYTES
            # every SPARSE-th key (numpy's S16 bisects bytewise, as DuckDB sorted them)
            self._sparse = np.fromfile(folder / "keys", dtype=f"V{KEY_BYTES}").view(f"S{KEY_BYTES}")[::SPARSE].copy()

    def get(self, digest: object, default=None):
        if not isinstance(digest, str) or not self._rows:
            return default
        key = digest_key(digest)
        block = int(np.searchsorted(self._sparse, key, side="right")) - 1
        if block < 0:
            return default
        first = block * SPARSE
        raw = os.pread(self._keys, SPARSE * KEY_BYTES, first * KEY_BYTES)
        keys = np.frombuffer(raw, dtype=f"S{KEY_BYTES}")
        row = int(np.searchsorted(keys, key))
        # (numpy's scalars drop trailing NULs: the raw bytes are compared; several rows of one
        # key would be a collision of MD5s, each checked)
        while row < len(keys) and raw[row * KEY_BYTES:(row + 1) * KEY_BYTES] == key:
            found_digest, uri, date = self._row(first + row)
            if found_digest == digest:
                return uri, date
            row += 1
        return default

    def _row(self, row: int) -> list[str]:
        start, end = np.frombuffer(os.pread(self._offsets, 16, row * 8), dtype=np.uint64)
        return os.pread(self._heap, int(end - start), int(start)).decode("utf-8").split("\t")

    def __getitem__(self, digest: str) -> tuple[str, str]:
        found = self.get(digest)
        if found is None:
            raise KeyError(digest)
        return found

    def __contains__(self, digest: object) -> bool:
        return self.get(digest) is not None

    def __len__(self) -> int:
        return self._rows

    def __iter__(self) -> Iterator[str]:
        if self.folder is not None:
            for batch in pq.ParquetFile(self.folder / "rows.parquet").iter_batches(columns=["digest"]):
                yield from batch.column(0).to_pylist()

    def close(self) -> None:
        for fd in (self._keys, self._offsets, self._heap):
            if fd >= 0:
                os.close(fd)
        self._keys = self._offsets = self._heap = -1
        self._rows = 0

    def __del__(self):
        self.close()


def index_folder(folder: Path, date: str) -> Path:
    return folder / f"before={date}"


def payload_index(root: Path, date: str, folder: Path) -> PayloadIndex:
    """The index of the payloads archived before `date`, built in `folder` unless it is there."""
    folder.mkdir(parents=True, exist_ok=True)
    path = index_folder(folder, date)
    if not path.exists():
        with open(folder / ".lock", "w") as lock:  # one build per machine; the others wait, then read it
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not path.exists():
                build_index(root, date, folder)
    return PayloadIndex(path)


def _earlier_index(folder: Path, date: str) -> tuple[Path, str] | None:
    """The newest index in `folder` of a day before `date`, with that day."""
    days = sorted(p.name.removeprefix("before=") for p in folder.glob("before=*") if p.is_dir())
    days = [day for day in days if day < date and (index_folder(folder, day) / "rows.parquet").exists()]
    return (index_folder(folder, days[-1]), days[-1]) if days else None


def build_index(root: Path, date: str, folder: Path) -> Path:
    """Write `before=date/` in `folder` (in a temporary folder, renamed when whole)."""
    earlier = _earlier_index(folder, date)
    since = earlier[1] if earlier else None
    indexes = [str(p) for p in readable_parquet(shard_files(root, "warc", before=date))
               if since is None or p.parent.parent.name.removeprefix("date=") >= since]
    con = connect()
    con.execute(f"SET memory_limit = '{BUILD_MEMORY_LIMIT}'")
    con.execute(f"SET temp_directory = '{folder / '.spill'}'")
    con.execute("SET preserve_insertion_order = false")
    con.execute("SET TimeZone = 'UTC'")
    params: dict = {}
    if earlier is not None:
        params["earlier"] = str(earlier[0] / "rows.parquet")
    if indexes:
        params.update(indexes=indexes, response=WarcRecordKind.RESPONSE)
        sql = MERGED.format(new=NEW_FIRST_CAPTURES) if earlier else NEW_FIRST_CAPTURES + " ORDER BY key"
    elif earlier is not None:  # nothing archived since
        sql = "SELECT key, digest, uri, date FROM read_parquet($earlier) ORDER BY key"
    else:  # nothing archived yet
        sql = "SELECT NULL::BLOB AS key, NULL AS digest, NULL AS uri, NULL AS date WHERE false"
    path = index_folder(folder, date)
    # (a name of this process's own: on a shared folder another machine may be building too)
    partial = path.with_name(f"{path.name}.{socket.gethostname()}-{os.getpid()}.tmp")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir()
    _write(con.sql(sql, params=params).to_arrow_reader(BATCH_ROWS), partial)
    con.close()
    try:
        os.rename(partial, path)
    except OSError:  # built meanwhile by another machine: the same rows; ours goes
        shutil.rmtree(partial, ignore_errors=True)
        if not path.exists():
            raise
    for old in sorted(p for p in folder.glob("before=*") if p.is_dir() and not p.name.endswith(".tmp"))[:-KEEP]:
        shutil.rmtree(old, ignore_errors=True)
    return path


def _write(rows: pa.RecordBatchReader, folder: Path) -> None:
    """The rows (in key order) as the look-up's files and rows.parquet, a batch at a time."""
    written = 0
    with open(folder / "keys", "wb") as keys, open(folder / "offsets", "wb") as offsets, \
            open(folder / "heap", "wb") as heap, pq.ParquetWriter(folder / "rows.parquet", SCHEMA) as table:
        offsets.write(np.zeros(1, np.uint64).tobytes())
        for batch in rows:
            batch = pa.RecordBatch.from_arrays([batch.column(i).cast(SCHEMA.field(i).type) for i in range(4)],
                                               schema=SCHEMA)
            table.write_batch(batch)
            if not batch.num_rows:
                continue
            key_column = batch.column(0)
            keys.write(memoryview(key_column.buffers()[1])[key_column.offset * KEY_BYTES:
                                                           (key_column.offset + batch.num_rows) * KEY_BYTES])
            records = pa.compute.binary_join_element_wise(batch.column(1), batch.column(2), batch.column(3), "\t")
            _, record_offsets, record_bytes = records.buffers()
            ends = np.frombuffer(record_offsets, dtype=np.int32)[records.offset:records.offset + len(records) + 1]
            offsets.write((written + (ends[1:] - ends[0]).astype(np.uint64)).tobytes())
            heap.write(memoryview(record_bytes)[ends[0]:ends[-1]])
            written += int(ends[-1] - ends[0])
