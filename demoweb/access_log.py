"""The demo web's access log: one row per request the server answered.

Tests and benchmarks use it as ground truth for what the crawler actually did (politeness
gaps per host, conditional requests on recrawl, robots compliance), so rows carry
wall-clock start/end times. Rows live in memory and are written to Parquet at the end.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import NamedTuple


class AccessRecord(NamedTuple):
    host: str  # lowercase, no port; '' when the request could not be parsed
    path: str  # request target path, with query
    method: str
    start: float  # time.time() when the request head was received
    end: float  # time.time() just before the answer was handed to the socket (streamed
    # answers: after the last byte); never after the client could have it, but on the
    # politeness hosts' busy host (Response.logged_late_s)
    status: int
    bytes_sent: int  # body bytes only (0 for HEAD and 304)
    conditional: bool  # the request carried If-None-Match or If-Modified-Since
    conn_id: int  # server-wide connection number: shows keep-alive reuse


class AccessLog:
    """Append-only, lock-protected list of AccessRecord; safe to read from another thread."""

    def __init__(self) -> None:
        self._rows: list[AccessRecord] = []
        self._lock = threading.Lock()
        self._grew = threading.Condition(self._lock)

    def record(self, host: str, path: str, method: str, start: float, end: float,
               status: int, bytes_sent: int, conditional: bool, conn_id: int = 0) -> None:
        row = AccessRecord(host, path, method, start, end, status, bytes_sent, conditional, conn_id)
        with self._grew:
            self._rows.append(row)
            self._grew.notify_all()

    def wait_for(self, count: int, timeout: float = 5.0) -> bool:
        """Block until at least `count` rows exist. A row is added just after its response
        is drained, so a client can see the response a moment before the row appears."""
        with self._grew:
            return self._grew.wait_for(lambda: len(self._rows) >= count, timeout)

    @property
    def rows(self) -> list[AccessRecord]:
        """A snapshot copy of the rows so far."""
        with self._lock:
            return list(self._rows)

    def __len__(self) -> int:
        with self._lock:
            return len(self._rows)

    def clear(self) -> None:
        with self._lock:
            self._rows.clear()

    def to_arrow(self):
        """The rows as a pyarrow.Table (pyarrow is imported only when needed)."""
        import pyarrow as pa

        schema = pa.schema([
            ("host", pa.string()),
            ("path", pa.string()),
            ("method", pa.string()),
            ("start", pa.float64()),
            ("end", pa.float64()),
            ("status", pa.int32()),
            ("bytes_sent", pa.int64()),
            ("conditional", pa.bool_()),
            ("conn_id", pa.int64()),
        ])
        rows = self.rows
        columns = list(zip(*rows)) if rows else [[] for _ in AccessRecord._fields]
        return pa.Table.from_arrays(
            [pa.array(col, type=schema.field(i).type) for i, col in enumerate(columns)],
            schema=schema,
        )

    def write_parquet(self, path: str | Path) -> Path:
        import pyarrow.parquet as pq

        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(self.to_arrow(), path)
        return path
