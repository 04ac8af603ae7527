"""The frontier's rest on disk: each host's URLs in priority then frontier order, validators
kept, read on from saved cursors, the same from a table or a Parquet file."""

import datetime as dt

import pyarrow as pa
import pyarrow.parquet as pq

from crawl_assets.crawler.batches.disk_frontier import DiskFrontier
from crawl_assets.crawler.batches.arrow_schemas import FRONTIER_SCHEMA
from crawl_assets.crawler.fetching.workbench import FetchTask

CAPTURED = dt.datetime(2026, 11, 28, 10, 30, 5, 123456, tzinfo=dt.timezone.utc)


def frontier() -> pa.Table:
    rows = []
    for i in range(30):
        for host in ("b.test", "a.test", "xn--caf-dma.test", "ünï.test"):
            rows.append({"url": f"http://{host}/{i}", "host": host, "depth": i % 4, "priority": 1 + (i * 7) % 5,
                         "etag": 'W/"tab\there"' if i == 3 else None, "last_modified": "Sat, 28 Nov 2026" if i == 4 else None,
                         "last_captured_at": CAPTURED if i == 4 else None,
                         "last_payload_digest": "sha1:ABC" if i == 4 else None})
    return pa.Table.from_pylist(rows, schema=FRONTIER_SCHEMA)


def expected(table: pa.Table, host: str) -> list[FetchTask]:
    rows = [r for r in table.to_pylist() if r["host"] == host]
    rows.sort(key=lambda r: r["priority"])  # stable: frontier order within a priority
    return [FetchTask(**r) for r in rows]


def test_each_host_streams_in_priority_then_frontier_order_with_its_validators(tmp_path):
    table = frontier()
    disk = DiskFrontier.build(table, tmp_path)
    assert sorted(disk.hosts()) == sorted({"a.test", "b.test", "xn--caf-dma.test", "ünï.test"})
    assert disk.remaining() == 120
    for host in disk.hosts():
        got = disk.take(host, 7) + disk.take(host, 100)
        assert got == expected(table, host)
    assert disk.remaining() == 0 and disk.take("a.test", 3) == []


def test_a_parquet_file_gives_the_same_streams_and_cursors_resume_where_they_were(tmp_path):
    table = frontier()
    pq.write_table(table, tmp_path / "frontier.parquet", row_group_size=17)
    disk = DiskFrontier.build(tmp_path / "frontier.parquet", tmp_path / "spill")
    first = disk.take("ünï.test", 11)
    saved = {host: list(cursor) for host, cursor in disk.cursors.items()}  # what a checkpoint keeps
    disk.close()
    again = DiskFrontier.open(tmp_path / "spill", saved)
    assert first + again.take("ünï.test", 100) == expected(table, "ünï.test")
    assert again.take("a.test", 100) == expected(table, "a.test")
    assert again.remaining() == 60
