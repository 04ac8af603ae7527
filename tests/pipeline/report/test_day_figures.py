"""A day's key figures (day_report's numeric metadata, `make demo`'s summary) from the files."""

import pyarrow as pa

from crawl_assets.crawler.batches.arrow_schemas import DROPPED_SCHEMA
from crawl_assets.crawler.vocabulary import DropReason
from crawl_assets.pipeline.report.day_figures import day_figures
from crawl_assets.storage.layout import dropped_file, write_parquet_atomic

from crawl_files import fetch_row, write_fetch_log

A, B, C, D = (f"http://h{i}.demo.test/p.html" for i in range(4))


def write_two_days(root):
    write_fetch_log(root, "2026-11-28", [
        fetch_row(A, "2026-11-28T10:00:00", payload_digest="sha1:A", bytes=1000),
        fetch_row(B, "2026-11-28T10:00:01", payload_digest="sha1:B", bytes=2000),
        fetch_row(C, "2026-11-28T10:00:02", payload_digest="sha1:C", bytes=3000)])
    write_fetch_log(root, "2026-11-29", [
        fetch_row(A, "2026-11-29T10:00:00", status=304, status_class="not_modified", payload_digest="sha1:A", bytes=0),
        fetch_row(B, "2026-11-29T10:00:01", payload_digest="sha1:B2", bytes=2100),
        fetch_row(C, "2026-11-29T10:00:02", payload_digest="sha1:C", bytes=3000),
        fetch_row(D, "2026-11-29T10:00:03", payload_digest="sha1:D", bytes=500),
        fetch_row(D + "?x", "2026-11-29T10:00:04", status=404, status_class="http_4xx", bytes=10),
        fetch_row(D + "?y", "2026-11-29T10:00:05", status=None, status_class="robots_disallowed")], shard="s01")
    dropped = [{"host": "trap.demo.test", "reason": DropReason.REPEATED_PATH_SEGMENTS, "urls": 7},
               {"host": "trap.demo.test", "reason": DropReason.URL_TOO_LONG, "urls": 2},
               {"host": "h1.demo.test", "reason": DropReason.HOST_BUDGET, "urls": 30}]  # a budget, not a trap
    write_parquet_atomic(pa.Table.from_pylist(dropped, schema=DROPPED_SCHEMA), dropped_file(root, "2026-11-29", "s01"))


def test_a_revisit_day_counts_new_changed_and_unchanged_pages_and_the_bytes_304s_saved(tmp_path):
    write_two_days(tmp_path)
    first, second = day_figures(tmp_path, "2026-11-28"), day_figures(tmp_path, "2026-11-29")
    assert (first.pages_fetched, first.new_urls, first.changed, first.not_modified, first.bytes_saved) == (3, 3, 0, 0, 0)
    assert second.fetch_numbers() == {
        "pages_fetched": 5, "new_urls": 1, "changed": 1, "not_modified": 1, "identical": 1,
        "not_modified_share": 0.2, "bytes_saved": 1000, "trap_refusals": 9}
    # Neither dedup nor the plan ran on these files: their figures are unknown, not zero.
    assert (second.near_duplicate_groups, second.planned_for_tomorrow) == (None, None)
