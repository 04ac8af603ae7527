"""The registry step without Dagster: every URL discovered up to a day, and its seen filter."""

from datetime import date, datetime, timezone

import pytest

from crawl_assets.layout import url_registry_file, write_parquet_atomic
from crawl_assets.pipeline.crawl_history import history_through
from crawl_assets.pipeline.registry_step import (
    build_registry,
    build_seen_filter,
    describe_seen_filter,
    load_registry_urls,
)
from crawl_files import fetch_row, write_fetch_log, write_links, write_seeds

DAY = "2026-11-29"


@pytest.fixture
def crawl(tmp_path):
    write_seeds(tmp_path, ["http://a.test/", "http://b.test/"])
    write_links(tmp_path, "2026-11-27", [("http://a.test/", "http://a.test/one", 1),
                                         ("http://a.test/one", "http://a.test/two", 2)])
    write_links(tmp_path, "2026-11-28", [("http://b.test/", "http://a.test/one", 1),
                                         ("http://b.test/", "http://b.test/", 1),  # a seed, linked
                                         ("http://b.test/", "http://b.test/new", 1)], shard="s05")
    write_links(tmp_path, "2026-11-30", [("http://a.test/", "http://a.test/later", 1)])
    write_fetch_log(tmp_path, "2026-11-27", [fetch_row("http://a.test/", "2026-11-27T10:00:00"),
                                             fetch_row("http://a.test/one", "2026-11-27T11:00:00")])
    write_fetch_log(tmp_path, "2026-11-28", [
        fetch_row("http://a.test/", "2026-11-28T10:00:00", status=304, status_class="not_modified"),
        fetch_row("http://a.test/two", "2026-11-28T10:00:00", status=None, status_class="timeout")])
    return tmp_path


def test_the_registry_holds_every_url_found_up_to_the_day(crawl):
    result = build_registry(DAY, history_through(crawl, DAY))
    rows = {r["url"]: r for r in result.table.to_pylist()}
    assert list(rows) == sorted(rows) == ["http://a.test/", "http://a.test/one", "http://a.test/two",
                                          "http://b.test/", "http://b.test/new"]  # not /later
    # First seen on the earliest day, from the page that linked it that day, at its least depth.
    assert rows["http://a.test/one"]["first_seen"] == date(2026, 11, 27)
    assert rows["http://a.test/one"]["discovered_from"] == "http://a.test/"
    assert rows["http://a.test/two"]["depth"] == 2
    # Seeds count from the registry's own day unless a link found them earlier.
    assert rows["http://a.test/"]["first_seen"] == date(2026, 11, 29) and rows["http://a.test/"]["depth"] == 0
    assert rows["http://b.test/"]["first_seen"] == date(2026, 11, 28)
    # The latest answered fetch: the 304 counts, the timeout answered nothing.
    assert rows["http://a.test/"]["last_fetched"] == datetime(2026, 11, 28, 10, tzinfo=timezone.utc)
    assert rows["http://a.test/two"]["last_fetched"] is None
    assert result.counts.urls == 5 and result.counts.never_fetched == 3


def test_the_first_day_registry_is_the_seeds(tmp_path):
    write_seeds(tmp_path, ["http://a.test/"])
    result = build_registry(DAY, history_through(tmp_path, DAY))
    assert result.table.column("url").to_pylist() == ["http://a.test/"]
    assert result.counts.never_fetched == 1


def test_of_pages_linking_a_url_on_its_first_day_the_first_by_url_found_it(tmp_path):
    """Which fetch finished first differs between runs (a backfill and the nightly cycles of the
    same days); the registry must not, so a tie on the day goes to the smaller page URL."""
    write_seeds(tmp_path, ["http://a.test/"])
    for order in ([("http://z.test/", "http://a.test/p", 1), ("http://b.test/", "http://a.test/p", 1)],
                  [("http://b.test/", "http://a.test/p", 1), ("http://z.test/", "http://a.test/p", 1)]):
        write_links(tmp_path, "2026-11-28", order)
        rows = {r["url"]: r for r in build_registry(DAY, history_through(tmp_path, DAY)).table.to_pylist()}
        assert rows["http://a.test/p"]["discovered_from"] == "http://b.test/"


def test_the_seen_filter_knows_every_registered_url(crawl):
    registry = build_registry(DAY, history_through(crawl, DAY)).table
    write_parquet_atomic(registry, url_registry_file(crawl, DAY))
    urls = load_registry_urls(crawl, DAY)
    bloom = build_seen_filter(urls, fp_rate=0.001)
    assert all(url in bloom for url in registry.column("url").to_pylist())
    counts = describe_seen_filter(bloom, urls.num_rows, 0.001)
    assert counts.elements == 5 and counts.target_fp_rate == 0.001
    assert counts.measured_fp_rate <= 0.002 and counts.bits > 0


def test_a_missing_registry_says_what_to_materialise(tmp_path):
    with pytest.raises(FileNotFoundError, match="materialise url_registry for 2026-11-29"):
        load_registry_urls(tmp_path, DAY)
