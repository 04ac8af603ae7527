"""The rest of a shard's frontier on disk, so memory holds only the head of each host's queue
(the hybrid frontier: an in-memory head over a disk-backed rest).

The frontier rows are sorted once by host (then priority, then their order in the frontier)
into a spill file, one JSON line per URL, each host's lines together; an index keeps, per
host, where its next line is and how many are left. The batch admits a few URLs of every host
at the start and tops a host up whenever a turn leaves its queue short, so a shard of millions
of URLs holds a few per host in memory. The cursors (offset, left) are what a checkpoint
saves; the spill file stays beside the checkpoint, so a resumed batch reads on from them.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import duckdb
import pyarrow as pa

from ..fetching.workbench import FetchTask

SPILL_FILE = "frontier-rest.jsonl"
INDEX_FILE = "frontier-index.json"
# DuckDB sorts within this much memory and spills the rest to disk.
SORT_MEMORY = "256MB"

# One JSON line per URL, each host's lines together (host, then priority, then frontier order).
LINES_SQL = """
CREATE TEMP TABLE lines AS
SELECT host, json_array(url, depth, priority, etag, last_modified,
                        strftime(last_captured_at AT TIME ZONE 'UTC', '%Y-%m-%dT%H:%M:%S.%f+00:00'),
                        last_payload_digest)::VARCHAR AS line, priority, position
FROM {source}
"""
# DuckDB writes the lines itself; no quoting is needed, since JSON escapes tabs and newlines.
COPY_SQL = """
COPY (SELECT line FROM lines ORDER BY host, priority, position) TO '{path}'
(FORMAT csv, HEADER false, QUOTE '', ESCAPE '', DELIMITER '\t')
"""
# Each host's first line and line count, in the same order: offsets are running byte sums.
INDEX_SQL = """
SELECT host, count(*) AS lines,
       sum(sum(strlen(line) + 1)) OVER (ORDER BY host) - sum(strlen(line) + 1) AS offset
FROM lines GROUP BY host ORDER BY host
"""


class DiskFrontier:
    def __init__(self, folder: Path, cursors: dict[str, list[int]]):
        """cursors: host -> [byte offset of its next line, lines left]."""
        self.folder = Path(folder)
        self.cursors = {host: list(c) for host, c in cursors.items() if c[1] > 0}
        self._file = open(self.folder / SPILL_FILE, "rb")

    @classmethod
    def build(cls, frontier: pa.Table | Path, folder: Path) -> "DiskFrontier":
        """Spill the frontier (an Arrow table, or a Parquet file read in batches) to folder."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        con = duckdb.connect()
        con.execute(f"SET memory_limit = '{SORT_MEMORY}'; SET preserve_insertion_order = true; "
                    f"SET temp_directory = '{folder / 'sort.tmp'}'")
        if isinstance(frontier, pa.Table):
            table = _with_all_columns(frontier)
            con.register("frontier", table.append_column("position", pa.array(range(table.num_rows), pa.int64())))
            source = "frontier"
        else:
            quoted = str(frontier).replace("'", "''")
            con.execute("CREATE VIEW frontier AS SELECT *, file_row_number AS position "
                        f"FROM read_parquet('{quoted}', file_row_number = true)")
            source = "frontier"
            columns = {row[0] for row in con.execute("DESCRIBE frontier").fetchall()}
            missing = [c for c in ("etag", "last_modified", "last_captured_at", "last_payload_digest")
                       if c not in columns]
            if missing:
                source = f"(SELECT *, {', '.join(f'NULL AS {c}' for c in missing)} FROM frontier)"
        con.execute(LINES_SQL.format(source=source))
        quoted_spill = str(folder / SPILL_FILE).replace("'", "''")
        con.execute(COPY_SQL.format(path=quoted_spill))
        cursors = {host: [int(offset), lines] for host, lines, offset in con.execute(INDEX_SQL).fetchall()}
        (folder / INDEX_FILE).write_text(json.dumps(cursors))
        con.close()
        return cls(folder, cursors)

    @classmethod
    def open(cls, folder: Path, cursors: dict[str, list[int]] | None = None) -> "DiskFrontier":
        """The spill file of an earlier attempt, read on from a checkpoint's cursors."""
        if cursors is None:
            cursors = json.loads((Path(folder) / INDEX_FILE).read_text())
        return cls(folder, cursors)

    def hosts(self) -> list[str]:
        return list(self.cursors)

    def remaining(self) -> int:
        return sum(c[1] for c in self.cursors.values())

    def take(self, host: str, count: int) -> list[FetchTask]:
        """The host's next `count` URLs (fewer at its end), read from disk."""
        cursor = self.cursors.get(host)
        if cursor is None:
            return []
        self._file.seek(cursor[0])
        tasks = []
        for _ in range(min(count, cursor[1])):
            line = self._file.readline()
            url, depth, priority, etag, last_modified, captured, digest = json.loads(line)
            tasks.append(FetchTask(url, host, depth, priority, etag=etag, last_modified=last_modified,
                                   last_captured_at=dt.datetime.fromisoformat(captured) if captured else None,
                                   last_payload_digest=digest))
            cursor[0] += len(line)
        cursor[1] -= len(tasks)
        if cursor[1] == 0:
            del self.cursors[host]
        return tasks

    def close(self) -> None:
        self._file.close()


def _with_all_columns(frontier: pa.Table) -> pa.Table:
    """Frontier files written before the validators existed lack their columns."""
    for name, kind in (("etag", pa.string()), ("last_modified", pa.string()),
                       ("last_captured_at", pa.timestamp("us", tz="UTC")), ("last_payload_digest", pa.string())):
        if name not in frontier.column_names:
            frontier = frontier.append_column(name, pa.nulls(frontier.num_rows, kind))
    return frontier
