"""Day order: a frontier is built only once the crawl's previous day has closed."""

import os
import threading

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from crawl_assets.pipeline.day_order import (
    EarlierDay, PreviousDayOpen, check_in_order, fetch_begun, previous_day, urls_new_since, wait_for_previous_day,
)
from crawl_assets.pipeline.fetch_step import CHECKPOINT_DIR
from crawl_assets.storage.layout import (
    fetch_log_file, frontier_file, host_dup_ratio_file, priorities_file, seen_filter_file, warc_dir,
)

DAY1, DAY2, DAY4 = "2026-11-20", "2026-11-21", "2026-11-23"


def write(path, urls=("http://a.test/",)):
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"url": list(urls)}), path)


def close(root, day):
    write(seen_filter_file(root, day))
    write(host_dup_ratio_file(root, day))
    write(priorities_file(root, day))


def test_the_first_day_does_not_wait(tmp_path):
    assert wait_for_previous_day(tmp_path, DAY1, wait_limit_s=0).day is None


def test_a_day_whose_close_has_not_landed_holds_the_next_frontier(tmp_path):
    write(frontier_file(tmp_path, DAY1, "s00"))
    write(fetch_log_file(tmp_path, DAY1, "s00"))
    with pytest.raises(PreviousDayOpen, match=rf"previous day {DAY1}.*seen_url_filter\[{DAY1}\], "
                                              rf"near_duplicate_clusters\[{DAY1}\], recrawl_priorities\[{DAY1}\]"
                                              rf".*day_close_job for {DAY1}"):
        wait_for_previous_day(tmp_path, DAY2, wait_limit_s=0.2, poll_s=0.05)

    # The close lands while the frontier waits: the frontier goes on.
    lines = []
    closing = threading.Timer(0.3, close, (tmp_path, DAY1))
    closing.start()
    state = wait_for_previous_day(tmp_path, DAY2, wait_limit_s=60, log=lines.append, poll_s=0.05)
    closing.join()
    assert state.day == DAY1 and state.closed
    assert lines == [f"waiting for {DAY1} to close before building {DAY2}: "
                     "seen_url_filter, near_duplicate_clusters, recrawl_priorities not written yet"]


def test_a_fetch_run_again_after_the_close_reopens_the_day(tmp_path):
    write(frontier_file(tmp_path, DAY1, "s00"))
    write(fetch_log_file(tmp_path, DAY1, "s00"))
    close(tmp_path, DAY1)
    assert previous_day(tmp_path, DAY2).closed
    later = os.stat(seen_filter_file(tmp_path, DAY1)).st_mtime + 5
    os.utime(fetch_log_file(tmp_path, DAY1, "s00"), (later, later))
    assert previous_day(tmp_path, DAY2).missing == ("seen_url_filter", "near_duplicate_clusters", "recrawl_priorities")


def test_a_day_nobody_crawled_is_skipped(tmp_path):
    write(frontier_file(tmp_path, DAY1, "s00"))
    close(tmp_path, DAY1)
    write(frontier_file(tmp_path, DAY4, "s01"))  # a later day does not count
    assert previous_day(tmp_path, "2026-11-22") == previous_day(tmp_path, DAY2)
    assert previous_day(tmp_path, "2026-11-22").day == DAY1


def test_new_urls_are_counted_against_the_previous_frontier(tmp_path):
    write(frontier_file(tmp_path, DAY1, "s00"), ["http://a.test/"])
    write(frontier_file(tmp_path, DAY1, "s01"), ["http://b.test/"])
    today = pa.table({"url": ["http://a.test/", "http://b.test/", "http://b.test/new"]})
    assert urls_new_since(tmp_path, DAY1, today) == 1
    assert urls_new_since(tmp_path, None, today) == 3


def test_only_a_day_after_every_started_day_is_in_order(tmp_path):
    write(frontier_file(tmp_path, DAY2, "s00"))  # started, closed or not
    check_in_order(tmp_path, DAY2)  # the newest day itself (a re-run, a refetch)
    check_in_order(tmp_path, DAY4)
    with pytest.raises(EarlierDay, match=rf"^{DAY1} is before {DAY2}, the newest day this crawl has started"):
        check_in_order(tmp_path, DAY1)


def test_a_day_whose_fetch_landed_or_began_is_told_by_its_files(tmp_path):
    write(frontier_file(tmp_path, DAY1, "s00"))
    assert fetch_begun(tmp_path, DAY1) == []  # a frontier alone: nothing fetched from it yet
    write(fetch_log_file(tmp_path, DAY1, "s03"))
    (warc_dir(tmp_path, DAY1, "s01") / CHECKPOINT_DIR).mkdir(parents=True)  # a batch under way
    assert fetch_begun(tmp_path, DAY1) == ["s01", "s03"]
    assert fetch_begun(tmp_path, DAY2) == []
