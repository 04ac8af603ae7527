"""Arrow tables of the crawl: the core's results in, the schemas the Parquet files keep out."""

from collections import Counter
from datetime import datetime, timezone

import pyarrow as pa

from crawl_assets.crawler.batches.arrow_schemas import (
    DROPPED_SCHEMA,
    FETCH_LOG_SCHEMA,
    FRONTIER_SCHEMA,
    LINKS_SCHEMA,
    dropped_table,
    fetch_log_table,
    fetch_tasks,
    links_table,
)
from crawl_assets.crawler.fetching.fetch_record import FetchRecord
from crawl_assets.crawler.vocabulary import DropReason, StatusClass, WarcRecordKind

WHEN = datetime(2026, 11, 29, 10, 0, tzinfo=timezone.utc)


def test_fetch_records_become_fetch_log_rows_in_the_schema():
    records = [
        FetchRecord("http://a.test/", "a.test", 0, StatusClass.OK, fetched_at=WHEN, status=200,
                    simhash=0xFFFF_FFFF_FFFF_FFFF, warc_type=WarcRecordKind.RESPONSE, warc_offset=1234),
        FetchRecord("http://a.test/slow", "a.test", 1, StatusClass.TIMEOUT, error="read timeout"),
    ]
    table = fetch_log_table(records)
    assert table.schema == FETCH_LOG_SCHEMA
    first, second = table.to_pylist()
    assert first["simhash"] == 0xFFFF_FFFF_FFFF_FFFF  # the top bit survives as uint64
    assert first["status_class"] == "ok" and first["warc_type"] == "response" and first["fetched_at"] == WHEN
    assert second["status"] is None and second["error"] == "read timeout"
    assert fetch_log_table([]).schema == FETCH_LOG_SCHEMA


def test_links_keep_their_order_and_reason():
    links = [("http://a.test/", "http://a.test/b", "a.test", 1, True, None),
             ("http://a.test/", "http://a.test/c?x=1", "a.test", 1, False, DropReason.PATTERN_BUDGET)]
    table = links_table(links)
    assert table.schema == LINKS_SCHEMA
    assert table.column("dropped_reason").to_pylist() == [None, "pattern_budget"]
    assert table.column("is_new").to_pylist() == [True, False]
    assert links_table([]).num_rows == 0 and links_table([]).schema == LINKS_SCHEMA


def test_dropped_counts_are_one_row_per_host_and_reason_in_order():
    dropped = {"b.test": Counter({DropReason.DEMOTED_HOST: 4}),
               "a.test": Counter({DropReason.URL_TOO_LONG: 2, DropReason.BLOCKLIST_URL: 1})}
    table = dropped_table(dropped)
    assert table.schema == DROPPED_SCHEMA
    assert [tuple(r.values()) for r in table.to_pylist()] == [
        ("a.test", "blocklist_url", 1), ("a.test", "url_too_long", 2), ("b.test", "demoted_host", 4)]


def test_frontier_rows_become_fetch_tasks_with_their_validators():
    rows = [{"url": "http://a.test/", "host": "a.test", "depth": 0, "priority": 1, "etag": '"v1"',
             "last_modified": "Mon, 23 Nov 2026 10:00:00 GMT", "last_captured_at": WHEN},
            {"url": "http://a.test/p", "host": "a.test", "depth": 2, "priority": 3, "etag": None,
             "last_modified": None, "last_captured_at": None}]
    first, second = fetch_tasks(pa.Table.from_pylist(rows, schema=FRONTIER_SCHEMA))
    assert (first.url, first.depth, first.priority, first.etag, first.last_captured_at) == (
        "http://a.test/", 0, 1, '"v1"', WHEN)
    assert second.etag is None and second.priority == 3


def test_a_frontier_file_from_before_revisit_records_still_reads():
    old = pa.table({"url": ["http://a.test/"], "host": ["a.test"], "depth": pa.array([0], pa.int32()),
                    "priority": pa.array([1], pa.int32()), "etag": [None], "last_modified": [None]})
    (task,) = fetch_tasks(old)
    assert task.last_captured_at is None
