"""An in-memory index of a catalog's captures, for look-ups called in a loop (captures.py loads
it once a caller has looked up a few URLs): the captures view read once, sorted by URL key, as
an Arrow table, and a dict from each URL key to its rows. A look-up is then a dict hit and a
slice of a few rows, not a query (a query over the view reads every index file's footer, tens
a second; over an indexed DuckDB table, about a thousand a second on a quiet machine)."""

from __future__ import annotations

import itertools

# Above this many captures the index is not built: its rows and keys would not fit in memory.
MAX_ROWS = 2_000_000


class CaptureIndex:
    def __init__(self, con, columns: str):
        """con: a connection to the catalog; columns: the columns each look-up returns (SQL)."""
        table = con.sql(f"SELECT urlkey, {columns} FROM captures ORDER BY urlkey").to_arrow_table()
        self.ranges: dict[str, tuple[int, int]] = {}
        start = 0
        for key, rows in itertools.groupby(table.column("urlkey").to_pylist()):
            count = sum(1 for _ in rows)
            self.ranges[key] = (start, count)
            start += count
        self.table = table.drop_columns(["urlkey"])

    def rows(self, key: str) -> list[dict]:
        """The captures filed under a URL key (an empty list when there is none)."""
        span = self.ranges.get(key)
        return self.table.slice(*span).to_pylist() if span else []

    @staticmethod
    def fits(con) -> bool:
        (rows,), = con.execute("SELECT count(*) FROM captures").fetchall()
        return rows <= MAX_ROWS
